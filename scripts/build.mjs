#!/usr/bin/env node
// `npm run build` (and `prepare`, which every `npm install` runs): compiles src/ to dist/ with
// tsc, unless dist/ is current. Current means: a previous build finished (dist/.build-stamp) and
// nothing it depends on changed since it started: no file or directory under src/ is newer (a
// new, edited, renamed or deleted file changes one), and tsconfig.json, package.json and
// package-lock.json hold what they held (compared by content: `npm install` rewrites the lockfile
// even when nothing changed). Even an incremental tsc parses every source and type file (about
// 1000) before finding nothing to do; this check reads modification times and three files.
// `--force` (npm run build -- --force) builds whatever the times say; so does removing dist/.
//
// After tsc, the CLI is bundled with esbuild into dist/cli-bundle/ (what bin/panelctl.js runs):
// see bundleCli below and docs/decisions/cli.md.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const src = join(root, 'src');
const cliSrc = join(src, 'cli');
const bundleDir = join(root, 'dist', 'cli-bundle');
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
  if (recorded === digest && newest(src) < built && existsSync(join(bundleDir, 'main.js'))) {
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
await bundleCli();
// Stamped with the time the build started: a file saved while tsc ran is newer, so the next
// build compiles it.
writeFileSync(stamp, `${JSON.stringify({ started: started.toISOString(), inputs: digest })}\n`);
utimesSync(stamp, started, started);

/** The path of `file`, as an import specifier relative to the bundle's directory. */
function fromBundle(file) {
  const path = relative(bundleDir, file).split(sep).join('/');
  return path.startsWith('.') ? path : `./${path}`;
}

/** Where tsc puts the output of a source file (src/a/b.ts or .js specifier -> dist/a/b.js). */
function compiledPath(file) {
  return join(root, 'dist', relative(src, file)).replace(/\.(tsx?|js)$/, '.js');
}

/**
 * The CLI (src/cli/** with commander) as one ES module graph of a few chunks: a command loads
 * its chunk and the chunks it shares, instead of ~20 files resolved and compiled one by one
 * (start-up time of `keys list --json` is benchmarked against `node -e 0`). The dynamic imports
 * of program.ts stay dynamic (esbuild's code splitting), so a command still loads only what it
 * uses. Only src/cli is bundled: src/shared, src/daemon and src/store, and every other package,
 * are imported from where they are (dist/, node_modules/), so the daemon a CLI command runs is
 * the same dist/ code the tests and the service run, and no module exists twice in a process.
 * `import.meta.url` in a CLI source means the URL of that file's tsc output, as without the
 * bundle (paths relative to it, e.g. bin/panelctl.js, keep working).
 */
async function bundleCli() {
  const { build } = await import('esbuild');
  const boundary = {
    name: 'panelctl-cli-boundary',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (args.path.startsWith('node:')) return { path: args.path, external: true };
        if (!args.path.startsWith('.') && !args.path.startsWith('/')) return args.path === 'commander' ? undefined : { path: args.path, external: true };
        // Imports inside commander's own files are relative too: bundled with it.
        if (!args.importer.startsWith(src + sep)) return undefined;
        const target = resolve(args.resolveDir, args.path);
        if (target.startsWith(cliSrc + sep)) return undefined;
        return { path: fromBundle(compiledPath(target)), external: true };
      });
      b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        const here = `new URL(${JSON.stringify(fromBundle(compiledPath(args.path)))}, import.meta.url).href`;
        return { contents: text.replaceAll('import.meta.url', here), loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
      });
    },
  };
  rmSync(bundleDir, { recursive: true, force: true });
  await build({
    entryPoints: [join(cliSrc, 'main.ts')],
    outdir: bundleDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    tsconfig: join(root, 'tsconfig.json'),
    plugins: [boundary],
    // Smaller sources parse faster. Identifiers are not minified, and functions and classes keep
    // their own names where bundling renames them (commander's errors name themselves after their
    // class), so stack traces and `error.name` read as without the bundle.
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    // commander is CommonJS: its require() of node builtins needs a require in an ES module.
    banner: { js: "import { createRequire as __panelctlCreateRequire } from 'node:module'; const require = __panelctlCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  });
}
