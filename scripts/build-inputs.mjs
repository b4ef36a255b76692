// The build's configuration inputs and their digest: what `npm run build` records in
// dist/.build-stamp and compares by content before skipping a build (scripts/build.mjs), and what
// the bundle tests check the stamp against. By content, not modification time: `npm install`
// rewrites package-lock.json even when nothing in it changed.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The files besides src/ that a build depends on, relative to the repository's root. */
export const BUILD_INPUTS = ['tsconfig.json', 'package.json', 'package-lock.json', 'scripts/build.mjs', 'scripts/build-inputs.mjs', 'scripts/bundle-names.mjs', 'bin/panelctl.js', 'bin/daemon-loader.js'];

/**
 * One digest of the build inputs' contents under `root` (a missing file counts as missing) and of
 * the Node that builds: the V8 code caches beside the bundles are only accepted by the V8 that
 * made them, so another Node version builds again.
 */
export function inputsDigest(root) {
  const hash = createHash('sha256');
  hash.update(`${process.version} ${process.arch}\0`);
  for (const name of BUILD_INPUTS) {
    try {
      hash.update(readFileSync(join(root, name)));
    } catch {
      hash.update('(missing)');
    }
    hash.update('\0');
  }
  return hash.digest('hex');
}
