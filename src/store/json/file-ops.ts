// The JSON store's only way to the disk. Every write checks that all its bytes went out (a
// short write near a full disk is an error, never a silent truncation), then fsyncs; a failed
// replace leaves the previous file untouched. Tests swap the operations to inject short writes,
// ENOSPC and fsync failures on the real write paths.
import { randomBytes } from 'node:crypto';
import { open as fsOpen, rename as fsRename, truncate as fsTruncate, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** The primitive operations, replaceable as a whole or one by one (fault injection). */
export interface FileOps {
  open(path: string, flags: string, mode?: number): Promise<FileHandle>;
  /** One write call: may write fewer bytes than asked (the caller loops). */
  write(handle: FileHandle, data: Buffer, position?: number): Promise<number>;
  sync(handle: FileHandle): Promise<void>;
  truncate(path: string, length: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
}

export const realFileOps: FileOps = {
  open: (path, flags, mode) => fsOpen(path, flags, mode),
  write: async (handle, data, position) => (await handle.write(data, 0, data.length, position ?? null)).bytesWritten,
  sync: (handle) => handle.datasync(),
  truncate: (path, length) => fsTruncate(path, length),
  rename: (from, to) => fsRename(from, to),
};

/** An error of the disk itself, carrying what failed for the log (never shown to API clients). */
export class DiskWriteError extends Error {
  constructor(
    readonly path: string,
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    const cause = options?.cause as NodeJS.ErrnoException | undefined;
    super(`${operation} ${path} failed: ${cause?.code ?? cause?.message ?? 'unknown error'}`, options);
    this.name = 'DiskWriteError';
  }
}

/** Writes all of `data` (at `position`, or appended), looping over short writes; a write of 0 bytes is ENOSPC. */
export async function writeFully(ops: FileOps, handle: FileHandle, data: Buffer, position?: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const written = await ops.write(handle, data.subarray(done), position === undefined ? undefined : position + done);
    if (!(written > 0)) throw Object.assign(new Error('no space left on device (short write)'), { code: 'ENOSPC' });
    done += written;
  }
}

/**
 * Replaces `path` with `content` atomically and durably: a temp file beside it, all bytes
 * written and fsynced, renamed over the old one, then the directory fsynced so the rename is
 * durable too. On any failure the temp file is removed and the old file is untouched.
 * @example
 * await replaceFile(realFileOps, '/data/store.json', JSON.stringify(state), 0o600);
 */
export async function replaceFile(ops: FileOps, path: string, content: string | Buffer, mode = 0o600): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let handle: FileHandle | null = null;
  try {
    handle = await ops.open(temp, 'wx', mode);
    await writeFully(ops, handle, typeof content === 'string' ? Buffer.from(content) : content, 0);
    await ops.sync(handle);
    await handle.close();
    handle = null;
    await ops.rename(temp, path);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw new DiskWriteError(path, 'replacing', { cause: error });
  }
  await syncDirectory(ops, dirname(path));
}

/** fsync of a directory, so a rename or a new file in it survives a power loss. */
export async function syncDirectory(ops: FileOps, dir: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await ops.open(dir, 'r');
    await ops.sync(handle);
  } catch (error) {
    throw new DiskWriteError(dir, 'syncing directory', { cause: error });
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
