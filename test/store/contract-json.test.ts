// The store contract on the embedded JSON store, each test in a fresh data directory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import type { Store } from '../../src/store/store.js';
import { describeStoreContract } from './contract/suite.js';

const dirs: string[] = [];
const dirOf = new WeakMap<Store, string>();
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describeStoreContract('json', {
  async open() {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-contract-'));
    dirs.push(dir);
    const store = await JsonStore.open(layout(dir), { create: true });
    dirOf.set(store, dir);
    return store;
  },
  async reopen(store) {
    const dir = dirOf.get(store)!;
    await store.close();
    const again = await JsonStore.open(layout(dir));
    dirOf.set(again, dir);
    return again;
  },
});
