#!/usr/bin/env node
// `npm run build` (and `prepare`, which every `npm install` runs): compiles src/ to dist/ with
// tsc, unless dist/ is current. Current means: a previous build finished (dist/.build-stamp) and
// nothing it depends on changed since it started: no file or directory under src/ is newer (a
// new, edited, renamed or deleted file changes one), and tsconfig.json, package.json and
// package-lock.json hold what they held (compared by content: `npm install` rewrites the lockfile
// even when nothing changed). Even an incremental tsc parses every source and type file (about
// 1000) before finding nothing to do; this check reads modification times and three files.
// `--force` (npm run build -- --force) builds whatever the times say; so does removing dist/.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const inputs = ['tsconfig.json', 'package.json', 'package-lock.json'].map((name) => join(root, name));

/** The newest modification time under `dir`, directories included (they change when files come and go). */
function newest(dir) {
  let latest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** One digest of the build's configuration files. */
function inputsDigest() {
  const hash = createHash('sha256');
  for (const path of inputs) {
    try {
      hash.update(readFileSync(path));
    } catch {
      hash.update('(missing)');
    }
    hash.update('\0');
  }
  return hash.digest('hex');
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

const built = mtime(stamp);
const digest = inputsDigest();
const force = process.argv.includes('--force');
if (!force && built !== null) {
  let recorded = '';
  try {
    recorded = JSON.parse(readFileSync(stamp, 'utf8')).inputs;
  } catch {
    // an old or damaged stamp: build
  }
  if (recorded === digest && newest(join(root, 'src')) < built) {
    console.log('dist/ is up to date with src/ (npm run build -- --force rebuilds)');
    process.exit(0);
  }
}

const started = new Date();
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json'), '--incremental', '--tsBuildInfoFile', join(root, 'dist', '.tsbuildinfo')], {
  stdio: 'inherit',
});
if (result.status !== 0) process.exit(result.status ?? 1);
// Stamped with the time the build started: a file saved while tsc ran is newer, so the next
// build compiles it.
writeFileSync(stamp, `${JSON.stringify({ started: started.toISOString(), inputs: digest })}\n`);
utimesSync(stamp, started, started);
