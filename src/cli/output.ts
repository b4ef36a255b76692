// How commands show things to people: colours and aligned tables on a terminal, plain
// tab-separated lines when piped (like gh), confirmations on stderr, a spinner only on a TTY.
// Loaded only for human output: `--json` never imports chalk.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Context } from './context.js';

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  /** Colour of the cell on a terminal. */
  style?: (text: string, row: T) => string;
  /** This column may be cut to fit the terminal width (the last such column is cut first). */
  shrink?: boolean;
}

export interface Spinner {
  /** Clears the spinner line; safe to call more than once. */
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Visible width of a string without ANSI escapes. */
export function visibleLength(text: string): number {
  // eslint-disable-next-line no-control-regex
  return [...text.replace(/\x1b\[[0-9;]*m/g, '')].length;
}

export class Ui {
  /** Colours for stdout (off when piped, with NO_COLOR or --no-color). */
  readonly c: ChalkInstance;
  /** Colours for stderr. */
  readonly e: ChalkInstance;
  readonly tty: boolean;

  constructor(readonly ctx: Context) {
    this.tty = Boolean(ctx.io.stdout.isTTY);
    this.c = new Chalk({ level: ctx.colorAllowed && this.tty ? 1 : 0 });
    this.e = new Chalk({ level: ctx.colorAllowed && ctx.io.stderr.isTTY ? 1 : 0 });
  }

  /** A confirmation on stderr: "✓ Created webhook 3". */
  success(message: string): void {
    this.ctx.err(`${this.e.green('✓')} ${message}`);
  }

  /** A warning on stderr (shown-once secrets, insecure choices). */
  warn(message: string): void {
    this.ctx.err(`${this.e.yellow('!')} ${message}`);
  }

  /** A note on stderr. */
  note(message: string): void {
    this.ctx.err(this.e.dim(message));
  }

  /**
   * Rows as an aligned table with a header on a terminal; as tab-separated values without a
   * header when piped, so `cut -f` and `awk` work.
   */
  table<T>(rows: readonly T[], columns: Column<T>[], empty = 'nothing to show'): void {
    if (!this.tty) {
      for (const row of rows) this.ctx.out(columns.map((col) => col.value(row).replace(/[\t\n]/g, ' ')).join('\t'));
      return;
    }
    if (rows.length === 0) {
      this.note(empty);
      return;
    }
    const cells = rows.map((row) => columns.map((col) => col.value(row).replace(/\s+/g, ' ')));
    const widths = columns.map((col, i) => Math.max(col.header.length, ...cells.map((r) => visibleLength(r[i]))));
    const total = () => widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
    const termWidth = this.ctx.io.stdout.columns;
    // A pseudo-terminal without a size reports 0 columns.
    const max = termWidth && termWidth >= 40 ? termWidth : 120;
    for (let i = columns.length - 1; i >= 0 && total() > max; i--) {
      if (columns[i].shrink) widths[i] = Math.max(columns[i].header.length, widths[i] - (total() - max));
    }
    const last = columns.length - 1;
    const pad = (text: string, width: number, i: number) => {
      const cut = visibleLength(text) > width ? `${[...text].slice(0, Math.max(0, width - 1)).join('')}…` : text;
      // The last column is not padded, so lines carry no trailing spaces.
      return i === last ? cut : cut + ' '.repeat(Math.max(0, width - visibleLength(cut)));
    };
    this.ctx.out(columns.map((col, i) => this.c.bold(pad(col.header.toUpperCase(), widths[i], i))).join('  '));
    rows.forEach((row, r) => {
      const line = columns.map((col, i) => {
        const text = pad(cells[r][i], widths[i], i);
        return col.style ? col.style(text, row) : text;
      });
      this.ctx.out(line.join('  '));
    });
  }

  /** A timestamp: without milliseconds on a terminal, as sent when piped. */
  time(iso: string | null | undefined): string {
    if (!iso) return '-';
    return this.tty ? iso.replace(/\.\d+Z$/, 'Z') : iso;
  }

  /** One record as "key: value" lines, keys aligned on a terminal. */
  record(pairs: Array<[string, string]>): void {
    const width = Math.max(...pairs.map(([k]) => k.length));
    for (const [key, value] of pairs) {
      this.ctx.out(this.tty ? `${this.c.dim(`${key}:`.padEnd(width + 1))} ${value}` : `${key}: ${value}`);
    }
  }

  /** ✓ / ✗ coloured. */
  ok(success: boolean): string {
    return success ? this.c.green('✓') : this.c.red('✗');
  }

  /** A spinner on stderr, only when stderr is a terminal and not in --json mode. */
  spinner(text: string): Spinner {
    const stderr = this.ctx.io.stderr;
    if (!stderr.isTTY || this.ctx.json) return { stop: () => undefined };
    let frame = 0;
    const draw = () => stderr.write(`\r\x1b[K${this.e.cyan(FRAMES[frame++ % FRAMES.length])} ${text}`);
    draw();
    let timer: NodeJS.Timeout | null = setInterval(draw, 80);
    return {
      stop: () => {
        if (!timer) return;
        clearInterval(timer);
        timer = null;
        stderr.write('\r\x1b[K');
      },
    };
  }
}
