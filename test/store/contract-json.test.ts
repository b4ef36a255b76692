// The store contract on the embedded JSON store, each test in a fresh data directory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { describeStoreContract } from './contract/suite.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describeStoreContract('json', {
  async open() {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-contract-'));
    dirs.push(dir);
    return JsonStore.open(layout(dir), { create: true });
  },
});
