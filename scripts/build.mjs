#!/usr/bin/env node
// `npm run build` (and `prepare`, which every `npm install` runs): compiles src/ to dist/ with
// tsc, unless dist/ is current. Current means: a previous build finished (dist/.build-stamp) and
// nothing it depends on changed since it started: no file or directory under src/ is newer (a
// new, edited, renamed or deleted file changes one), and the build inputs (build-inputs.mjs:
// tsconfig.json, package.json, package-lock.json, these scripts and the loaders) hold what they
// held (compared by content: `npm install` rewrites the lockfile even when nothing changed), and
// the same Node builds (the code caches are only accepted by the V8 that made them).
// Even an incremental tsc parses every source and type file (about 1000) before finding nothing
// to do; this check reads modification times and the inputs.
// `--force` (npm run build -- --force) builds whatever the times say; so does removing dist/.
//
// After tsc, the CLI is bundled with esbuild into dist/cli-bundle/ (what bin/panelctl.js runs):
// see bundleCli below and docs/decisions/cli.md; then the daemon into dist/daemon-bundle/ (what
// `daemon start` runs, through bin/daemon-loader.js): see bundleDaemon and docs/decisions/daemon-start.md.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inputsDigest } from './build-inputs.mjs';
import { inferredNames } from './bundle-names.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const src = join(root, 'src');
const cliSrc = join(src, 'cli');
const sharedSrc = join(src, 'shared');
const bundleDir = join(root, 'dist', 'cli-bundle');
const daemonBundleDir = join(root, 'dist', 'daemon-bundle');
const daemonEntry = join(src, 'daemon', 'entry.ts');
const daemonLoader = join(root, 'bin', 'daemon-loader.js');

/**
 * The command families that get a bundle of their own beside the whole CLI's (cli.NAME.js:
 * commander, the shared modules and that family, no other), each with the listing whose run
 * makes its code cache. A command of one of them reads and compiles that bundle only, about a
 * third of the whole (bin/panelctl.js picks it from argv); help, unknown commands and every
 * other family run from cli.js. The families are those of one-shot API calls, each with a
 * listing the cache's run can make against a server answering an empty list.
 */
const FAMILY_BUNDLES = {
  keys: ['keys', 'list', '--json'],
  webhooks: ['webhooks', 'list', '--json'],
  sites: ['sites', 'list', '--json'],
  subscriptions: ['subscriptions', 'list', '--json'],
  users: ['users', 'list', '--json'],
};

/** The newest modification time under `dir`, directories included (they change when files come and go). */
function newest(dir) {
  let latest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

const built = mtime(stamp);
const digest = inputsDigest(root);
const force = process.argv.includes('--force');
if (!force && built !== null) {
  let recorded = '';
  try {
    recorded = JSON.parse(readFileSync(stamp, 'utf8')).inputs;
  } catch {
    // an old or damaged stamp: build
  }
  if (recorded === digest && newest(src) < built && existsSync(join(bundleDir, 'cli.js.cache')) && existsSync(join(daemonBundleDir, 'daemon.js.cache'))) {
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
rmSync(bundleDir, { recursive: true, force: true });
await bundleCli();
for (const [family, args] of Object.entries(FAMILY_BUNDLES)) await bundleCli({ family, args });
await bundleDaemon();
// Stamped with the time the build started: a file saved while tsc ran is newer, so the next
// build compiles it.
writeFileSync(stamp, `${JSON.stringify({ started: started.toISOString(), inputs: digest })}\n`);
utimesSync(stamp, started, started);

/**
 * A module whose exports `names` are getters: the module `specifier` is required when one is
 * first read.
 */
function lazyExports(names, specifier) {
  const getters = names.map((name) => `${JSON.stringify(name)}: { enumerable: true, get: () => load()[${JSON.stringify(name)}] }`);
  return `let loaded; const load = () => (loaded ??= require(${specifier})); Object.defineProperties(exports, { __esModule: { value: true }, ${getters.join(', ')} });`;
}

/**
 * An ES module of one function per function the built-in `specifier` exports, each requiring
 * the built-in when first called. Scope-hoisted by esbuild like any bundled function: unlike
 * getters (a CommonJS module that the importer copies into a namespace of getters of its own),
 * it costs nothing at start. Importing anything else of the built-in fails the build.
 */
function lazyFunctions(namespace, specifier) {
  const names = Object.keys(namespace).filter((name) => name !== 'default' && typeof namespace[name] === 'function');
  return names.map((name) => `export function ${name}(...args) { return require(${specifier}).${name}(...args); }`).join('\n');
}

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
 * The CLI (src/cli/** with commander) as one CommonJS script, dist/cli-bundle/cli.js, which
 * bin/panelctl.js compiles with a V8 code cache made here (cli.js.cache): Node 20 has no code
 * cache for ES modules (module.enableCompileCache is 22.1+), and compiling commander and the
 * CLI's modules on every start was most of what `keys list --json` spends above a bare https
 * request. Modules stay lazy without code splitting: esbuild wraps each module that an
 * `import()` reaches in an initialiser, so a command still runs only its own modules' code.
 *
 * Only src/cli is bundled: src/shared, src/daemon and src/store, and every other package, are
 * loaded from where they are (dist/, node_modules/), but for `daemon start`'s import of the
 * daemon's entry, which loads the daemon's bundle (bundleDaemon below), and no module exists
 * twice in a process.
 * Their static imports become require() (ES modules through require(esm), Node >= 20.19);
 * their `import()`s stay real imports, made by the loader (see bin/panelctl.js): a script
 * compiled with cached data cannot call import() itself on Node 20. `import.meta.url` in a CLI
 * source means the URL of that file's tsc output, as without the bundle.
 *
 * With `family` (FAMILY_BUNDLES above), the same script with that family's commands and none of
 * the others', dist/cli-bundle/cli.FAMILY.js; `args` is the command whose run makes the cache.
 */
async function bundleCli({ family = null, args = ['keys', 'list', '--json'] } = {}) {
  const { build } = await import('esbuild');
  const name = family ? `cli.${family}.js` : 'cli.js';
  const program = join(cliSrc, 'program.ts');
  let familyFound = false;
  const boundary = {
    name: 'panelctl-cli-boundary',
    setup(b) {
      // A family's bundle: the program's table still names every top-level command (argv is
      // read as in the whole CLI), but the modules of the others are not in it. The loader runs
      // this bundle only for a command of this family, so the program never loads another.
      if (family) {
        b.onResolve({ filter: /^\.\/commands\// }, (args) => {
          if (args.importer !== program || args.kind !== 'dynamic-import') return undefined;
          if (args.path === `./commands/${family}/index.js`) {
            familyFound = true;
            return undefined;
          }
          return { path: args.path, namespace: 'panelctl-other-family' };
        });
        b.onLoad({ filter: /.*/, namespace: 'panelctl-other-family' }, (args) => ({
          contents: `throw new Error(${JSON.stringify(`panelctl: the ${family} bundle does not hold ${args.path} (bin/panelctl.js chose the wrong bundle)`)});`,
          loader: 'js',
        }));
      }
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (args.namespace === 'panelctl-lazy' || args.namespace === 'panelctl-lazy-builtin' || args.namespace === 'panelctl-daemon') return { path: args.path, external: true };
        // commander needs child_process only to run executable subcommands, which panelctl has
        // none of: it is required when first used, not on every start.
        if (args.path === 'node:child_process' && args.kind === 'require-call') return { path: args.path, namespace: 'panelctl-lazy-builtin' };
        // node:os is for the home directory, read only when no directory is given: it is loaded
        // when one of its functions is first called (Node does not load it on its own).
        if (args.path === 'node:os' && args.kind === 'import-statement') return { path: args.path, namespace: 'panelctl-lazy-builtin-names' };
        if (args.path.startsWith('node:')) return { path: args.path, external: true };
        // ink has a top-level await, so require() cannot load it: the code that needs it imports
        // it first (watch's loadView), and its static imports read that namespace.
        if (args.path === 'ink' && args.kind === 'import-statement') return { path: 'ink', namespace: 'panelctl-imported' };
        // commander's index.js makes a default program (a whole Command) when it loads, and its
        // ES module entry copies every export into a namespace: our sources get its classes
        // straight from its lib/ files instead (a name not re-exported here fails the build).
        if (args.path === 'commander' && args.importer.startsWith(src + sep)) return { path: 'commander', namespace: 'panelctl-commander' };
        if (!args.path.startsWith('.') && !args.path.startsWith('/')) return args.path === 'commander' ? undefined : { path: args.path, external: true };
        // Imports inside commander's own files are relative too: bundled with it.
        if (!args.importer.startsWith(src + sep)) return undefined;
        const target = resolve(args.resolveDir, args.path);
        if (target.startsWith(cliSrc + sep) || target.startsWith(sharedSrc + sep)) return undefined;
        // The daemon's entry is the daemon's bundle, through its loader (bundleDaemon below).
        if (compiledPath(target) === compiledPath(daemonEntry)) {
          if (args.kind !== 'dynamic-import') throw new Error('cli bundle: the daemon entry is imported with import(), where a command needs it');
          return { path: 'daemon-entry', namespace: 'panelctl-daemon' };
        }
        const path = fromBundle(compiledPath(target));
        // A static import of daemon or store code is required where a name of it is first used,
        // not when the importing module starts (context.ts needs daemon/lock.js only after a
        // refused connection).
        if (args.kind === 'import-statement') return { path, namespace: 'panelctl-lazy' };
        return { path, external: true };
      });
      b.onLoad({ filter: /.*/, namespace: 'panelctl-lazy-builtin' }, (args) => ({
        contents: `let loaded; module.exports = new Proxy({}, { get: (_, name) => (loaded ??= require(${JSON.stringify(args.path)}))[name] });`,
        loader: 'js',
      }));
      b.onLoad({ filter: /.*/, namespace: 'panelctl-lazy-builtin-names' }, async (args) => ({
        contents: lazyFunctions(await import(args.path), JSON.stringify(args.path)),
        loader: 'js',
      }));
      b.onLoad({ filter: /.*/, namespace: 'panelctl-commander' }, () => {
        const lib = join(dirname(createRequire(import.meta.url).resolve('commander')), 'lib');
        const from = (file) => JSON.stringify(join(lib, file));
        const contents = [
          `export { Command } from ${from('command.js')};`,
          `export { Option } from ${from('option.js')};`,
          `export { Argument } from ${from('argument.js')};`,
          `export { CommanderError, InvalidArgumentError } from ${from('error.js')};`,
        ].join('\n');
        return { contents, loader: 'js', resolveDir: lib };
      });
      b.onLoad({ filter: /.*/, namespace: 'panelctl-daemon' }, () => ({ contents: `module.exports = require(${JSON.stringify(fromBundle(daemonLoader))}).loadDaemon();`, loader: 'js' }));
      b.onLoad({ filter: /.*/, namespace: 'panelctl-imported' }, (args) => ({ contents: `module.exports = __panelctlImported(${JSON.stringify(args.path)});`, loader: 'js' }));
      b.onLoad({ filter: /.*/, namespace: 'panelctl-lazy' }, async (args) => {
        // Its names, from the tsc output (built before the bundle): one getter each.
        const names = Object.keys(await import(pathToFileURL(resolve(bundleDir, args.path)).href));
        return { contents: lazyExports(names, JSON.stringify(args.path)), loader: 'js' };
      });
      // The version is package.json's, read here rather than on every start: package.json is an
      // input of the build (a change rebuilds), so the bundle's constant is what dist/shared/version.js reads.
      b.onLoad({ filter: /[\\/]src[\\/]shared[\\/]version\.ts$/ }, () => ({
        contents: `export const VERSION = ${JSON.stringify(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version)};`,
        loader: 'ts',
      }));
      b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        const here = `require('node:url').pathToFileURL(require('node:path').join(__dirname, ${JSON.stringify(fromBundle(compiledPath(args.path)))})).href`;
        return { contents: text.replaceAll('import.meta.url', here), loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
      });
    },
  };
  const result = await build({
    entryPoints: [join(cliSrc, 'main.ts')],
    outfile: join(bundleDir, name),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    tsconfig: join(root, 'tsconfig.json'),
    plugins: [boundary],
    // Smaller sources parse faster. Identifiers are not minified, and functions and classes keep
    // their own names where bundling renames them (commander's errors name themselves after their
    // class), so stack traces and `error.name` read as without the bundle.
    charset: 'ascii',
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  if (family && !familyFound) throw new Error(`cli bundle: src/cli/program.ts no longer imports ./commands/${family}/index.js: update FAMILY_BUNDLES`);
  const [output] = result.outputFiles;
  const imports = Object.values(result.metafile.outputs)[0].imports.filter((i) => i.kind === 'dynamic-import' && i.external);
  mkdirSync(bundleDir, { recursive: true });
  writeFileSync(join(bundleDir, name), wrapCli(leanInitialisers(inferredNames(output.text)), imports));
  writeCodeCache(join(bundleDir, name), args);
}

/**
 * esbuild's initialisers of lazily run modules, made cheaper for the modules a run never starts
 * (every command module but its own): at start, each `var …, init_x = __esm({ "src/x.ts"() { … } })`
 * made an object, a method, a closure and its context, and each module whose namespace an
 * `import()` needs had its namespace filled with one getter per export (`__export`). Both are
 * young objects that live to the end of the run (the collection during a run copies them). Here
 * each initialiser becomes one function declaration, run once as __esm runs it (a second call
 * returns, or throws the first call's error again; a call while it runs returns), and the
 * module's `__export` moves into it, before its body: esbuild reads a lazy module's namespace only
 * after calling its initialiser. The build fails if the output does not have the expected shape.
 */
function leanInitialisers(text) {
  const ts = createRequire(import.meta.url)('typescript');
  const file = ts.createSourceFile('cli.js', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const edits = [];
  /** `init_x = __esm({ "key"() { body } })`: the declarator's parts, or null. */
  const initialiser = (declaration) => {
    const call = declaration.initializer;
    if (!call || !ts.isCallExpression(call) || !ts.isIdentifier(call.expression) || call.expression.text !== '__esm') return null;
    const [object] = call.arguments;
    if (call.arguments.length !== 1 || !ts.isObjectLiteralExpression(object) || object.properties.length !== 1) throw new Error('cli bundle: an __esm call of an unexpected shape');
    const [method] = object.properties;
    if (!ts.isMethodDeclaration(method) || method.parameters.length !== 0 || !ts.isStringLiteral(method.name) || !method.body) throw new Error('cli bundle: an __esm method of an unexpected shape');
    return { name: declaration.name.text, key: method.name.text, body: method.body };
  };
  /** The identifier esbuild derives from a module's path (`src/cli/commands/keys/index.ts` -> keys). */
  const baseOf = (key) => {
    const parts = key.replace(/^[\w-]+:/, '').split(/[\\/]/);
    let base = parts.at(-1).replace(/\.[jt]sx?$/, '');
    if (base === 'index' && parts.length > 1) base = parts.at(-2);
    return base.replace(/[^\w$]/g, '_');
  };
  let pendingExport = null;
  let lean = 0;
  for (const statement of file.statements) {
    const start = statement.getStart(file);
    if (ts.isExpressionStatement(statement) && ts.isCallExpression(statement.expression) && ts.isIdentifier(statement.expression.expression) && statement.expression.expression.text === '__export') {
      const target = statement.expression.arguments[0];
      pendingExport = { statement, target: target.getText(file), text: text.slice(start, statement.end) };
      continue;
    }
    if (!ts.isVariableStatement(statement)) continue;
    const declarations = statement.declarationList.declarations;
    const last = declarations.at(-1);
    const init = initialiser(last);
    if (!init) continue;
    if (declarations.slice(0, -1).some((d) => initialiser(d) || d.initializer)) throw new Error(`cli bundle: ${init.name} is declared beside initialised variables`);
    let moved = '';
    if (pendingExport && pendingExport.target.replace(/\d*_exports\d*$/, '') === baseOf(init.key).replace(/\d*$/, '')) {
      moved = pendingExport.text;
      edits.push([pendingExport.statement.getStart(file), pendingExport.statement.end, '']);
    }
    pendingExport = null;
    const state = `$esm${lean}`;
    const body = text.slice(init.body.getStart(file) + 1, init.body.end - 1);
    const others = declarations.slice(0, -1).map((d) => d.getText(file));
    const declaration = `var ${[...others, `${state}=0`].join(',')};function ${init.name}(){if(${state}===1)return;if(${state})throw ${state}[0];${state}=1;try{${moved}${body}}catch(error){throw ${state}=[error],error}}`;
    edits.push([start, statement.end, declaration]);
    lean++;
  }
  if (lean === 0) throw new Error('cli bundle: no __esm initialiser found');
  let out = text;
  for (const [from, to, replacement] of edits.sort((a, b) => b[0] - a[0])) out = out.slice(0, from) + replacement + out.slice(to);
  if (/\b__esm\(\{/.test(out)) throw new Error('cli bundle: an __esm initialiser is left');
  return out;
}

/**
 * The bundle as one function expression, the loader's (bin/panelctl.js) to call, with each
 * external `import()` replaced: built-in modules are required, anything else is imported by
 * the loader's `__panelctlImport` (relative paths from dist/cli-bundle/). Every `import(` of
 * the output must be one esbuild reports as an external dynamic import, or the build fails.
 */
function wrapCli(text, imports) {
  let body = text;
  let replaced = 0;
  for (const specifier of new Set(imports.map((i) => i.path))) {
    const call = `import(${JSON.stringify(specifier)})`;
    const count = body.split(call).length - 1;
    if (count === 0) throw new Error(`cli bundle: esbuild reports import(${specifier}) but the output has no ${call}`);
    const replacement = specifier.startsWith('node:') ? `Promise.resolve().then(()=>require(${JSON.stringify(specifier)}))` : `__panelctlImport(${JSON.stringify(specifier)})`;
    body = body.replaceAll(call, replacement);
    replaced += count;
  }
  if (/\bimport\(/.test(body)) throw new Error('cli bundle: an import() is left that is not an external dynamic import');
  if (replaced < imports.length) throw new Error('cli bundle: fewer import() calls than esbuild reports');
  // keepNames' helper defines `name` on every function and class it wraps, which allocates a
  // descriptor and a map per function at start. Most already have that name (a declaration
  // `function f` is named f): the property is then left as it is, which reads the same.
  const helper = 'var __name=(target,value)=>__defProp(target,"name",{value,configurable:!0});';
  if (body.split(helper).length !== 2) throw new Error("cli bundle: esbuild's __name helper is not where it was expected");
  body = body.replace(helper, 'var __name=(target,value)=>target.name===value?target:__defProp(target,"name",{value,configurable:!0});');
  // esbuild escapes any other character (charset: ascii), and the loader relies on it (it reads the
  // source the cache holds as latin1, a plain copy of its bytes).
  if (/[^\x00-\x7f]/.test(body)) throw new Error('cli bundle: the output is not ASCII');
  return `(function (exports, require, module, __filename, __dirname, __panelctlImport, __panelctlImported) {${body}\n})`;
}

/**
 * V8's code cache of cli.js after a `keys list --json` run (in a child process, against a local
 * HTTP server: see writeCodeCache in bin/panelctl.js): the compiled code of commander, the
 * program, the context and the client. It is only an optimisation: V8 rejects a cache made by
 * another Node version or other flags, and the loader then compiles the source. The file starts
 * with the source it belongs to (see bin/panelctl.js). The run's stdout (its JSON) is dropped.
 */
function writeCodeCache(file, args) {
  const loader = JSON.stringify(join(root, 'bin', 'panelctl.js'));
  const result = spawnSync(process.execPath, ['-e', `require(${loader}).writeCodeCache(${JSON.stringify(file)}, ${JSON.stringify(args)})`], { stdio: ['ignore', 'pipe', 'inherit'] });
  if (result.status !== 0 || !existsSync(`${file}.cache`)) throw new Error(`cli bundle: writing the code cache of ${basename(file)} failed`);
}

/**
 * The daemon (src/daemon/entry.ts: what `daemon start` uses) as one CommonJS script,
 * dist/daemon-bundle/daemon.js, with src/daemon, src/store, src/shared and every package they
 * load, which bin/daemon-loader.js compiles with a V8 code cache made here (daemon.js.cache):
 * a start from dist/ and node_modules resolved, read, linked and compiled some 1,200 module
 * files, most of a start's CPU (docs/decisions/daemon-start.md). The CLI's bundle sends
 * `daemon start`'s import of the entry here (bundleCli), so that command loads no daemon or store
 * module from dist/ and no package twice; every other command, the tests' in-process app and the
 * docs generator load dist/ as before.
 *
 * In the bundle, `import.meta.url` means the URL of the file's tsc output (the metrics listener's
 * worker is started from dist/), a package file's `__dirname` and `__filename` are where that file
 * is installed (@fastify/swagger-ui serves its assets from there), and every `import()` of a
 * module left outside is a require(): a script compiled with cached data cannot import() on Node 20.
 */
async function bundleDaemon() {
  const { build } = await import('esbuild');
  const requireFromBundle = createRequire(join(daemonBundleDir, 'daemon.js'));
  const resolvedFromBundle = new Map();
  const plugin = {
    name: 'panelctl-daemon-bundle',
    setup(b) {
      // pg's optional native binding: required only where `pg.native` is read, which we never do.
      b.onResolve({ filter: /^pg-native$/ }, (args) => ({ path: args.path, external: true }));
      // node:http2 is for fastify's `http2` option and undici's `allowH2`, neither of which the
      // daemon uses: it is required when first used (it is one of the largest built-in modules).
      b.onResolve({ filter: /^(node:)?http2$/ }, (args) => {
        if (args.namespace === 'panelctl-lazy-builtin') return { path: args.path, external: true };
        return args.kind === 'require-call' ? { path: 'node:http2', namespace: 'panelctl-lazy-builtin' } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: 'panelctl-lazy-builtin' }, (args) => ({
        contents: `let loaded; module.exports = new Proxy({}, { get: (_, name) => (loaded ??= require(${JSON.stringify(args.path)}))[name] });`,
        loader: 'js',
      }));
      // undici's client starts its HTTP/2 half (which reads http2's constants when it loads) with
      // the client module: it is required when a connection first negotiates h2.
      b.onLoad({ filter: /[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        const eager = "const connectH2 = require('./client-h2.js')";
        if (text.split(eager).length !== 2) throw new Error(`daemon bundle: ${args.path} no longer holds ${eager}: update bundleDaemon`);
        return { contents: text.replace(eager, "let clientH2\nconst connectH2 = (...args) => (clientH2 ??= require('./client-h2.js'))(...args)"), loader: 'js' };
      });
      // undici's index.js loads all of undici (fetch, WebSocket, caches, mocks: some 110 modules,
      // and Node's own undici through globalThis.Headers) for the Agent and connector the webhook
      // sender uses: our sources get those from their lib/ files, with the request methods that
      // index.js gives every dispatcher (a name not re-exported here fails the build).
      b.onResolve({ filter: /^undici$/ }, (args) => (args.importer.startsWith(src + sep) ? { path: 'undici', namespace: 'panelctl-undici' } : undefined));
      b.onLoad({ filter: /.*/, namespace: 'panelctl-undici' }, () => {
        const lib = join(dirname(createRequire(import.meta.url).resolve('undici')), 'lib');
        const from = (file) => JSON.stringify(join(lib, file));
        const contents = [
          `import Dispatcher from ${from('dispatcher/dispatcher.js')};`,
          `import api from ${from('api/index.js')};`,
          'Object.assign(Dispatcher.prototype, api);',
          `export { default as Agent } from ${from('dispatcher/agent.js')};`,
          `export { default as buildConnector } from ${from('core/connect.js')};`,
        ].join('\n');
        return { contents, loader: 'js', resolveDir: lib };
      });
      b.onLoad({ filter: /[\\/]src[\\/]shared[\\/]version\.ts$/ }, () => ({
        contents: `export const VERSION = ${JSON.stringify(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version)};`,
        loader: 'ts',
      }));
      b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        const here = `require('node:url').pathToFileURL(require('node:path').join(__dirname, ${JSON.stringify(relative(daemonBundleDir, compiledPath(args.path)).split(sep).join('/'))})).href`;
        return { contents: text.replaceAll('import.meta.url', here), loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
      });
      b.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (!/\b__(dirname|filename)\b/.test(text)) return undefined;
        // The package's directory, as a require() from the bundle finds it where it runs.
        let pkgDir = dirname(args.path);
        while (!existsSync(join(pkgDir, 'package.json')) || !JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).name) pkgDir = dirname(pkgDir);
        const name = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).name;
        if (!resolvedFromBundle.has(name)) resolvedFromBundle.set(name, requireFromBundle.resolve(`${name}/package.json`));
        if (resolvedFromBundle.get(name) !== join(pkgDir, 'package.json')) throw new Error(`daemon bundle: ${name} resolves from the bundle to another copy than ${pkgDir}`);
        if (/^\s*(import|export)\b/m.test(text)) throw new Error(`daemon bundle: ${args.path} is an ES module using __dirname or __filename`);
        if (/\b(var|let|const)\s+__(dirname|filename)\b/.test(text)) throw new Error(`daemon bundle: ${args.path} declares __dirname or __filename`);
        // Found when first used (a require.resolve from the bundle), not when the module starts.
        const dir = `__panelctlPackageDir(${JSON.stringify(name)}, ${JSON.stringify(relative(pkgDir, dirname(args.path)).split(sep).join('/'))})`;
        const contents = text
          .replace(/(?<![.\w$])__dirname\b/g, dir)
          .replace(/(?<![.\w$])__filename\b/g, `require("node:path").join(${dir}, ${JSON.stringify(basename(args.path))})`);
        return { contents, loader: 'js' };
      });
    },
  };
  rmSync(daemonBundleDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [daemonEntry],
    outfile: join(daemonBundleDir, 'daemon.js'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    tsconfig: join(root, 'tsconfig.json'),
    plugins: [plugin],
    // Whitespace and syntax minified, as the CLI's bundle. Names are not kept, unlike the CLI's:
    // keepNames wraps every nested function and class in a helper that defines its `name` each
    // time it is made, so closures made per request paid a property definition each (measured:
    // docs/PERFORMANCE.md). Nothing of the daemon reads a renamed name: its error classes set
    // `name` themselves, and packages in CommonJS (wrapped whole) are never renamed; a stack
    // trace shows a renamed function of ours (one whose name another module also used) as `f2`.
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: false,
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  const [output] = result.outputFiles;
  const imports = Object.values(result.metafile.outputs)[0].imports.filter((i) => i.kind === 'dynamic-import' && i.external);
  let body = output.text;
  for (const specifier of new Set(imports.map((i) => i.path))) {
    body = body.replaceAll(`import(${JSON.stringify(specifier)})`, `Promise.resolve().then(()=>require(${JSON.stringify(specifier)}))`);
  }
  if (/\bimport\(/.test(body)) throw new Error('daemon bundle: an import() is left that is not an external dynamic import');
  const packageDir = 'const __panelctlPackageDirs=new Map(),__panelctlPackageDir=(name,sub)=>{let dir=__panelctlPackageDirs.get(name);if(dir===undefined)__panelctlPackageDirs.set(name,dir=require("node:path").dirname(require.resolve(name+"/package.json")));return require("node:path").join(dir,sub)};';
  mkdirSync(daemonBundleDir, { recursive: true });
  // The directive first: esbuild's own "use strict" no longer is, after the helper.
  writeFileSync(join(daemonBundleDir, 'daemon.js'), `(function (exports, require, module, __filename, __dirname) {"use strict";${packageDir}${body}\n})`);
  // The cache is made by a start on a data directory initialised by the CLI just built, in a
  // temporary directory: none of the builder's panelctl settings (a PANELCTL_DATABASE_URL would
  // have init write to that database) reaches either process.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PANELCTL_') && name !== 'PANEL_DATA_DIR'));
  const dataDir = mkdtempSync(join(tmpdir(), 'panelctl-build-'));
  try {
    const init = spawnSync(process.execPath, [join(root, 'bin', 'panelctl.js'), 'init', '--data-dir', dataDir, '--password-stdin'], { input: 'code-cache-password\n', stdio: ['pipe', 'ignore', 'inherit'], env });
    if (init.status !== 0) throw new Error('daemon bundle: init for the code cache failed');
    const cache = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(daemonLoader)}).writeCodeCache(${JSON.stringify(dataDir)}).catch((error) => { console.error(error); process.exit(1); })`], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env,
    });
    if (cache.status !== 0) throw new Error('daemon bundle: writing the code cache failed');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
