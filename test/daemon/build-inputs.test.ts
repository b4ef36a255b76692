// What `npm run build` compares before it skips a build (scripts/build-inputs.mjs): the inputs'
// contents, not their modification times (`npm install` rewrites package-lock.json unchanged
// after its build), and the Node that builds (the code caches only serve the V8 that made them).
import { cp, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { BUILD_INPUTS, inputsDigest } = (await import(pathToFileURL(join(ROOT, 'scripts/build-inputs.mjs')).href)) as {
  BUILD_INPUTS: string[];
  inputsDigest(root: string): string;
};

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

/** A directory holding copies of the repository's build inputs. */
async function copyInputs(): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'panelctl-build-inputs-'));
  for (const name of BUILD_INPUTS) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await cp(join(ROOT, name), join(dir, name));
  }
  return dir;
}

describe('the build inputs digest', () => {
  it('is the same for the same contents, whatever the modification times, and changes with a content', async () => {
    const copy = await copyInputs();
    const before = inputsDigest(copy);
    expect(before).toBe(inputsDigest(ROOT));
    await utimes(join(copy, 'package-lock.json'), new Date(), new Date());
    expect(inputsDigest(copy)).toBe(before);
    await writeFile(join(copy, 'package-lock.json'), `${await readFile(join(copy, 'package-lock.json'), 'utf8')} `);
    expect(inputsDigest(copy)).not.toBe(before);
  });

  it('changes with the Node that builds', () => {
    const before = inputsDigest(ROOT);
    const version = Object.getOwnPropertyDescriptor(process, 'version')!;
    Object.defineProperty(process, 'version', { ...version, value: 'v99.0.0' });
    try {
      expect(inputsDigest(ROOT)).not.toBe(before);
    } finally {
      Object.defineProperty(process, 'version', version);
    }
    expect(inputsDigest(ROOT)).toBe(before);
  });
});
