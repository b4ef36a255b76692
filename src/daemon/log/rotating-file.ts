// The daemon's log file, rotated by size: when a write takes it past `maxBytes`, daemon.log
// becomes daemon.log.1 (the older ones shift up, the oldest beyond `keep` is removed) and a
// new daemon.log starts. A pino destination: lines are written synchronously (as
// pino.destination does by default), so a crash loses nothing already logged.
import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { DEFAULT_LOG_KEEP, DEFAULT_LOG_MAX_BYTES } from '../../shared/paths.js';

export { DEFAULT_LOG_KEEP, DEFAULT_LOG_MAX_BYTES };

export interface RotatingFileOptions {
  /** Rotate once the file reaches this size (bytes). */
  maxBytes?: number;
  /** Rotated files kept besides the current one (daemon.log.1 … daemon.log.N). */
  keep?: number;
}

/**
 * @example
 * const file = new RotatingFile('/data/daemon.log', { maxBytes: 10 * 1024 * 1024, keep: 5 });
 * const logger = pino({}, file);
 */
export class RotatingFile {
  readonly maxBytes: number;
  readonly keep: number;
  #fd: number;
  #size: number;
  #closed = false;

  constructor(
    readonly path: string,
    options: RotatingFileOptions = {},
  ) {
    this.maxBytes = Math.max(1, options.maxBytes ?? DEFAULT_LOG_MAX_BYTES);
    this.keep = Math.max(0, options.keep ?? DEFAULT_LOG_KEEP);
    this.#fd = openSync(path, 'a', 0o600);
    this.#size = fstatSync(this.#fd).size;
  }

  /** Appends one chunk (pino writes one line per call); rotates after the write that fills the file. */
  write(chunk: string | Uint8Array): boolean {
    if (this.#closed) return false;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let written = 0;
    while (written < bytes.length) written += writeSync(this.#fd, bytes, written);
    this.#size += bytes.length;
    if (this.#size >= this.maxBytes) this.rotate();
    return true;
  }

  /** daemon.log → daemon.log.1 → … → daemon.log.<keep>; the one beyond is removed. */
  rotate(): void {
    closeSync(this.#fd);
    rmSync(`${this.path}.${this.keep}`, { force: true });
    for (let n = this.keep - 1; n >= 1; n--) {
      try {
        renameSync(`${this.path}.${n}`, `${this.path}.${n + 1}`);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    if (this.keep > 0) renameSync(this.path, `${this.path}.1`);
    else rmSync(this.path, { force: true });
    this.#fd = openSync(this.path, 'a', 0o600);
    this.#size = 0;
  }

  /** pino calls it on flushSync(); writes are synchronous already. */
  flushSync(): void {}

  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}
