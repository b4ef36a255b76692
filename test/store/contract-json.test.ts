// The store contract on the embedded JSON store, each test in a fresh data directory. A crash
// is the machine's: the data directory as a power loss would leave it, every byte written since
// its file's last fsync gone (the strictest crash the JSON store must survive).
import type { FileHandle } from 'node:fs/promises';
import { cp, mkdtemp, rm, stat, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { realFileOps, type FileOps } from '../../src/store/json/file-ops.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import type { Store } from '../../src/store/store.js';
import { describeStoreContract } from './contract/suite.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/**
 * File operations that remember, per file, how many bytes are safe from a power loss: its
 * length at its last fsync (a replaced file's, through its rename), else its length before this
 * store first opened it.
 */
function trackedOps(): { ops: FileOps; safeLengths: Map<string, number> } {
  const safeLengths = new Map<string, number>();
  const paths = new WeakMap<FileHandle, string>();
  const ops: FileOps = {
    ...realFileOps,
    async open(path, flags, mode) {
      if (!safeLengths.has(path)) safeLengths.set(path, await stat(path).then((s) => (s.isFile() ? s.size : 0), () => 0));
      const handle = await realFileOps.open(path, flags, mode);
      paths.set(handle, path);
      return handle;
    },
    async sync(handle) {
      const size = (await handle.stat()).size;
      await realFileOps.sync(handle);
      const path = paths.get(handle);
      if (path !== undefined) safeLengths.set(path, size);
    },
    async rename(from, to) {
      await realFileOps.rename(from, to);
      safeLengths.set(to, safeLengths.get(from) ?? 0);
      safeLengths.delete(from);
    },
  };
  return { ops, safeLengths };
}

const opened = new Map<Store, { dir: string; safeLengths: Map<string, number> }>();

async function openIn(dir: string, create: boolean): Promise<Store> {
  const { ops, safeLengths } = trackedOps();
  const store = await JsonStore.open(layout(dir), { create, fileOps: ops });
  opened.set(store, { dir, safeLengths });
  return store;
}

describeStoreContract('json', {
  async open() {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-contract-'));
    dirs.push(dir);
    return openIn(dir, true);
  },
  async crash(store) {
    const { dir, safeLengths } = opened.get(store)!;
    const copy = await mkdtemp(join(tmpdir(), 'panelctl-contract-crash-'));
    dirs.push(copy);
    await cp(dir, copy, { recursive: true });
    for (const [path, length] of safeLengths) {
      const target = join(copy, relative(dir, path));
      const size = await stat(target).then((s) => (s.isFile() ? s.size : null), () => null);
      if (size !== null && size > length) await truncate(target, length);
    }
    return openIn(copy, false);
  },
});
