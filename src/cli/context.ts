// What every command needs, created lazily: output streams, global options, the data
// directory, stored login (conf) and the API client. Commands receive it instead of
// reaching for process globals, so tests can run them with fake IO. Heavy modules (conf,
// undici, chalk) are imported only by the paths that use them: `keys list --json` must start
// about as fast as node itself.
import { readFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { homedir } from 'node:os';
import type { Command } from 'commander';
import { layout, resolveDataDir, DEFAULT_PORT, DEFAULT_HOST } from '../shared/paths.js';
import { ApiClient, type ClientOptions, type Transport } from './api-client.js';
import { CliError } from './errors.js';
import { EXIT } from '../shared/errors.js';
import { isDaemon } from '../daemon/lock.js';
import type { Ui } from './output.js';
import { effectiveGlobals } from './global-options.js';

export interface GlobalOptions {
  url?: string;
  token?: string;
  ca?: string;
  dataDir?: string;
  json?: boolean;
  color?: boolean;
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Writes one whole text to stdout (as `stdout.write`); the process's Io may skip creating the stream. */
  writeStdout?(text: string): void;
}

export interface StoredLogin {
  url: string;
  token: string;
  email?: string;
  /** The CA file trusted at login, so later commands trust the same daemon certificate. */
  ca?: string;
}

/** The data directory's daemon, when one runs: what its daemon.json says. */
export interface RunningDaemon {
  url: string;
  pid: number;
}

type ConfStore = import('conf').default<{ login?: StoredLogin }>;

/** URLs compare without trailing slashes. */
export function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

/**
 * The process's streams, each touched only when used: creating process.stdin is not free, nor is
 * process.stdout on a pipe (a socket of its own, and it makes the pipe non-blocking). A whole
 * text (a `--json` answer) written before anything used process.stdout goes straight to fd 1
 * with blocking writes, as process.stdout writes pipes and files on Linux anyway; what such a
 * write cannot take (a non-blocking pipe that is full, a closed pipe, any error) is handed to
 * process.stdout, which waits or reports it as before (main's closed-pipe guard).
 */
function processIo(): Io {
  let stdoutCreated = false;
  return {
    get stdout() {
      stdoutCreated = true;
      return process.stdout;
    },
    get stderr() {
      return process.stderr;
    },
    get stdin() {
      return process.stdin;
    },
    env: process.env,
    writeStdout(text: string) {
      let rest = Buffer.from(text, 'utf8');
      if (!stdoutCreated && process.platform !== 'win32') {
        try {
          while (rest.length > 0) rest = rest.subarray(writeSync(1, rest));
        } catch {
          // left to process.stdout below
        }
      }
      if (rest.length > 0) this.stdout.write(rest);
    },
  };
}

export class Context {
  #client: ApiClient | null = null;
  #config: Promise<ConfStore> | null = null;
  #stored: StoredLogin | undefined | null = null;
  #ui: Ui | null = null;
  #action: Command | null = null;
  #running: RunningDaemon | undefined | null = null;
  /** The running daemon's URL, when a command chose to follow it (login). */
  #followed: string | undefined;

  constructor(
    readonly program: Command,
    readonly io: Io = processIo(),
    /** The HTTP layer of every client this context makes (default node:http(s); tests pass a fake). */
    readonly transport?: Transport,
  ) {}

  /** Called before the action runs: global options may follow the command's name too. */
  setActionCommand(command: Command): void {
    this.#action = command;
  }

  get globals(): GlobalOptions {
    if (!this.#action) return this.program.opts<GlobalOptions>();
    return effectiveGlobals(this.program, this.#action) as GlobalOptions;
  }

  get env(): NodeJS.ProcessEnv {
    return this.io.env;
  }

  get json(): boolean {
    return Boolean(this.globals.json);
  }

  /** Colours are off with --no-color, a non-empty NO_COLOR, or TERM=dumb (TTY checks are per stream, in Ui). */
  get colorAllowed(): boolean {
    if (this.globals.color === false) return false;
    if (this.env.NO_COLOR) return false;
    return this.env.TERM !== 'dumb';
  }

  dataDir(): string {
    return resolveDataDir(this.globals.dataDir, this.env);
  }

  configDir(): string {
    if (this.env.PANELCTL_CONFIG_DIR) return resolve(this.env.PANELCTL_CONFIG_DIR);
    const xdg = this.env.XDG_CONFIG_HOME || join(homedir(), '.config');
    return join(xdg, 'panelctl');
  }

  configFile(): string {
    return join(this.configDir(), 'config.json');
  }

  /** The conf store of the login (URL, token), file mode 0600. Imported only to write. */
  config(): Promise<ConfStore> {
    this.#config ??= import('conf').then(
      ({ default: Conf }) =>
        new Conf<{ login?: StoredLogin }>({
          cwd: this.configDir(),
          configName: 'config',
          projectName: 'panelctl',
          configFileMode: 0o600,
        }),
    );
    return this.#config;
  }

  /**
   * The stored login. Read as the plain JSON file conf writes, without loading conf (and its
   * schema validator): every authenticated command needs it, and startup time matters.
   */
  storedLogin(): StoredLogin | undefined {
    if (this.#stored !== null) return this.#stored;
    let login: StoredLogin | undefined;
    try {
      const parsed = JSON.parse(readFileSync(this.configFile(), 'utf8')) as { login?: StoredLogin };
      if (parsed.login && typeof parsed.login.url === 'string' && typeof parsed.login.token === 'string') login = parsed.login;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new CliError(`cannot read ${this.configFile()}: ${(error as Error).message}; run panelctl logout to reset it`);
      }
    }
    this.#stored = login;
    return login;
  }

  async saveLogin(login: StoredLogin): Promise<void> {
    const { chmod } = await import('node:fs/promises');
    const config = await this.config();
    config.set('login', login);
    // The directory holds a credential too: nobody else needs to list it.
    await chmod(this.configDir(), 0o700).catch(() => undefined);
    this.#stored = login;
  }

  /** Forgets the stored login; an unreadable config file is removed (it holds nothing else). */
  async forgetLogin(): Promise<StoredLogin | undefined> {
    let previous: StoredLogin | undefined;
    try {
      previous = this.storedLogin();
    } catch {
      const { rm } = await import('node:fs/promises');
      await rm(this.configFile(), { force: true });
      this.#stored = undefined;
      return undefined;
    }
    if (previous) (await this.config()).delete('login');
    this.#stored = undefined;
    return previous;
  }

  /** --url or PANELCTL_URL, without trailing slashes. */
  explicitUrl(): string | undefined {
    const explicit = this.globals.url ?? this.env.PANELCTL_URL;
    return explicit ? explicit.replace(/\/+$/, '') : undefined;
  }

  /** --url, PANELCTL_URL, the followed daemon (login), the stored login's URL, else the default local daemon. */
  baseUrl(): string {
    return this.explicitUrl() ?? this.#followed ?? this.storedLogin()?.url ?? `https://${DEFAULT_HOST}:${DEFAULT_PORT}`;
  }

  /**
   * The data directory's running daemon: its pid file names a live panelctl daemon and its
   * daemon.json belongs to that pid. Read synchronously (two small files): asked at login and
   * when a connection is refused.
   */
  runningDaemon(): RunningDaemon | undefined {
    if (this.#running !== null) return this.#running;
    let running: RunningDaemon | undefined;
    try {
      const paths = layout(this.dataDir());
      const pid = Number.parseInt(readFileSync(paths.pidFile, 'utf8').trim(), 10);
      const state = JSON.parse(readFileSync(paths.stateFile, 'utf8')) as { pid?: number; url?: string };
      if (state.pid === pid && typeof state.url === 'string' && isDaemon(pid)) running = { url: state.url, pid };
    } catch {
      // no daemon has run here, or it is gone
    }
    this.#running = running;
    return running;
  }

  /**
   * Makes the data directory's running daemon this command's URL unless --url or PANELCTL_URL
   * names one: `login` goes where the daemon is, not where an older login was made.
   */
  followRunningDaemon(): void {
    if (this.explicitUrl()) return;
    this.#followed = this.runningDaemon()?.url.replace(/\/+$/, '');
  }

  /** The advice after a refused connection: where this data directory's daemon runs, if it does. */
  refusedAdvice(url: string): string {
    const running = this.runningDaemon();
    if (running && !sameUrl(running.url, url)) {
      return `The daemon of ${this.dataDir()} runs at ${running.url} (pid ${running.pid}): run panelctl login to use it, or pass --url ${running.url}`;
    }
    if (running) return `The daemon of ${this.dataDir()} (pid ${running.pid}) does not answer there: see panelctl daemon logs`;
    return `Is the daemon running? panelctl daemon start${this.globals.dataDir || this.env.PANEL_DATA_DIR ? ` --data-dir ${this.dataDir()}` : ''}`;
  }

  /** --ca, PANELCTL_CA, an explicit data directory, the CA stored at login, else the default data directory's certificate. */
  caFile(): string {
    const explicit = this.globals.ca ?? this.env.PANELCTL_CA;
    if (explicit) return resolve(explicit);
    if (this.globals.dataDir || this.env.PANEL_DATA_DIR) return layout(this.dataDir()).cert;
    const stored = this.storedLogin();
    if (stored?.ca && sameUrl(stored.url, this.baseUrl())) return stored.ca;
    return layout(this.dataDir()).cert;
  }

  /**
   * The token from --token, PANELCTL_TOKEN, or the stored login. The stored token is sent only
   * to the URL it was issued by, so `--url` never leaks it to another host.
   */
  token(): { token: string; source: 'flag' | 'stored' } | undefined {
    const explicit = this.globals.token ?? this.env.PANELCTL_TOKEN;
    if (explicit) return { token: explicit, source: 'flag' };
    const stored = this.storedLogin();
    if (stored && sameUrl(stored.url, this.baseUrl())) return { token: stored.token, source: 'stored' };
    return undefined;
  }

  /** An API client carrying the caller's token (unless requireToken is false and there is none). */
  client(options: { requireToken?: boolean } = {}): ApiClient {
    if (this.#client) return this.#client;
    const token = this.token();
    if (options.requireToken !== false && !token) {
      const stored = this.storedLogin();
      const why = stored ? `the stored login is for ${stored.url}, not ${this.baseUrl()}` : 'not logged in';
      throw new CliError(`${why}: run panelctl login (or pass --token / PANELCTL_TOKEN)`, EXIT.AUTH);
    }
    const baseUrl = this.baseUrl();
    this.#client = this.newClient({ baseUrl, token: token?.token, tokenSource: token?.source, caFile: this.caFile(), whenRefused: () => this.refusedAdvice(baseUrl) });
    return this.#client;
  }

  /** A client of its own (login without a token, status against daemon.json's URL), on this context's transport. */
  newClient(options: ClientOptions): ApiClient {
    return new ApiClient(this.transport ? { ...options, transport: this.transport } : options);
  }

  out(line: string): void {
    this.io.stdout.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  err(line: string): void {
    this.io.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  /** `--json`: only the data, as JSON, on stdout. */
  printJson(data: unknown): void {
    const text = `${JSON.stringify(data, null, 2)}\n`;
    if (this.io.writeStdout) this.io.writeStdout(text);
    else this.io.stdout.write(text);
  }

  /** The human output helpers (colours, tables, spinner), loaded on first use. */
  async ui(): Promise<Ui> {
    if (!this.#ui) {
      const { Ui } = await import('./output.js');
      this.#ui = new Ui(this);
    }
    return this.#ui;
  }

  /**
   * The one `--json` switch shared by every command: the data as JSON, or the command's
   * human view of it.
   */
  async render<T>(data: T, human: (ui: Ui, data: T) => void | Promise<void>): Promise<void> {
    if (this.json) {
      this.printJson(data);
      return;
    }
    await human(await this.ui(), data);
  }

  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }

  async close(): Promise<void> {
    await this.#client?.close();
  }
}
