#!/usr/bin/env node
// The CLI's loader. The CLI is src/cli, bundled by `npm run build` (run by `npm install`) into
// one script, dist/cli-bundle/cli.js, with a V8 code cache beside it (cli.js.cache): compiled
// here with that cache, the CLI starts without compiling commander and its own modules again
// (scripts/build.mjs, docs/decisions/cli.md). The families of listing commands (`keys`,
// `webhooks`, …) have a bundle of their own as well, cli.NAME.js, holding that family and what
// it uses but no other family: a command of one runs from it, and reads and compiles a third of
// the code. dist/cli/ holds the same code unbundled (docs generator, tests). This file is
// CommonJS (bin/package.json): an ES module entry would start Node's ESM loader before anything
// needs it.
'use strict';
const { readFileSync, statSync, writeFileSync } = require('node:fs');
// Module.createRequire is node:module's createRequire; the public node:module would load parts of
// the ES module loader on every start.
const { createRequire } = module.constructor;
const { join } = require('node:path');
const vm = require('node:vm');

const dir = join(__dirname, '..', 'dist', 'cli-bundle');
/** The cache file's header: the source's length (4 bytes), then the bundle's ctime when the cache was written (8). */
const HEADER = 12;
/**
 * The global options that take a value, long and short (src/cli/program.ts's root command;
 * test/cli/bundle.test.ts fails if the two differ).
 */
const VALUE_OPTIONS = new Set(['--url', '--token', '--ca', '--data-dir']);

/**
 * The top-level command `args` (argv without node and script) names, as src/cli/program.ts's
 * commandPath finds it: global options are skipped, with the value of one that takes a value;
 * null when `--` or nothing comes first. Only chooses a bundle: commander parses the line.
 */
function commandOf(args) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') return null;
    if (!arg.startsWith('-')) return arg;
    if (VALUE_OPTIONS.has(arg)) i++;
  }
  return null;
}

/**
 * The bundle that runs `args`: the named command's own when the build made one (a family the
 * bundle holds: its program never needs another), else the whole CLI, which also serves help,
 * unknown commands and everything else.
 */
function bundleFor(args) {
  const name = commandOf(args);
  if (name !== null && /^[a-z0-9]+$/.test(name)) {
    const file = join(dir, `cli.${name}.js`);
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat) return { file, stat };
  }
  const file = join(dir, 'cli.js');
  return { file, stat: statSync(file, { throwIfNoEntry: false }) };
}

/**
 * Compiles and runs a bundle (`file`, default cli.js), with its cache when it was made from this
 * very source. The cache file (FILE.cache) holds that source (after its header), then V8's data.
 * When the bundle is the file the cache was written for (same size and ctime: any write to it,
 * or a copy, changes its ctime, which nobody can set back), the source is taken from the cache
 * file and the bundle is not read at all; otherwise it is read and compared with the cache's
 * copy byte for byte (V8 itself checks only the source's length). V8 ignores a cache from
 * another Node version or other flags (`script.cachedDataRejected`): the source is compiled then.
 */
function loadCli({ file = join(dir, 'cli.js'), stat = statSync(file, { throwIfNoEntry: false }), useCache = true } = {}) {
  let source;
  let cachedData;
  if (useCache && stat) {
    try {
      const cache = readFileSync(`${file}.cache`);
      const length = cache.readUInt32LE(0);
      const end = HEADER + length;
      if (cache.length > end) {
        // The build writes its bundles in ASCII only: as written, their text is their bytes (latin1 copies them).
        if (stat.size === length && stat.ctimeMs === cache.readDoubleLE(4)) source = cache.latin1Slice(HEADER, end);
        else if (stat.size === length) {
          const bytes = readFileSync(file);
          if (cache.subarray(HEADER, end).equals(bytes)) source = bytes.toString('utf8');
        }
        if (source !== undefined) cachedData = cache.subarray(end);
      }
    } catch {
      // no cache (or a damaged one): compile the source
    }
  }
  source ??= readFileSync(file, 'utf8');
  const script = new vm.Script(source, { filename: file, cachedData });
  const module = { exports: {} };
  // A script compiled with cached data cannot import() on Node 20: the bundle's imports of ES
  // modules (packages, dist/ files, relative to the bundle) are made here, and kept for the
  // static imports of ink, which cannot be require()d (it has a top-level await).
  const imported = new Map();
  const importModule = (specifier) =>
    import(specifier.startsWith('.') ? require('node:url').pathToFileURL(join(dir, specifier)).href : specifier).then((namespace) => {
      imported.set(specifier, namespace);
      return namespace;
    });
  const importedModule = (specifier) => {
    if (!imported.has(specifier)) throw new Error(`panelctl: ${specifier} is used before it was imported`);
    return imported.get(specifier);
  };
  // The bundle's require: built-ins through this file's own, anything else (packages, dist/ files
  // relative to the bundle) through a require of the bundle's, made when first needed (a
  // `keys list` requires built-ins only).
  let bundleRequire;
  const requireFromBundle = (specifier) => (specifier.startsWith('node:') ? require(specifier) : (bundleRequire ??= createRequire(file))(specifier));
  script.runInThisContext()(module.exports, requireFromBundle, module, file, dir, importModule, importedModule);
  return { cli: module.exports, script, source };
}

/**
 * Run by scripts/build.mjs in a child process of its own, once per bundle: the code cache of
 * `file` after `main` ran `args` (a listing with --json, e.g. `keys list --json`) against a
 * local HTTP server answering an empty list, so the cache holds the code of the whole run (main,
 * the request over node:http(s) and its callbacks, the exit), not only what a fake transport
 * reaches: a function missing from the cache is compiled at every start. Written at exit (main
 * ends the process), only when the command succeeded.
 */
function writeCodeCache(file, args) {
  const { ctimeMs } = statSync(file);
  const cacheFile = `${file}.cache`;
  const { cli, script, source } = loadCli({ file, useCache: false });
  const server = require('node:http').createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"data":[],"error":null,"message":""}');
  });
  server.listen(0, '127.0.0.1', () => {
    process.on('exit', (code) => {
      if (code !== 0) return;
      const bytes = Buffer.from(source, 'utf8');
      const header = Buffer.alloc(HEADER);
      header.writeUInt32LE(bytes.length, 0);
      header.writeDoubleLE(ctimeMs, 4);
      writeFileSync(cacheFile, Buffer.concat([header, bytes, script.createCachedData()]));
    });
    for (const name of ['PANELCTL_CA', 'PANEL_DATA_DIR', 'PANELCTL_TOKEN']) delete process.env[name];
    Object.assign(process.env, { PANELCTL_URL: `http://127.0.0.1:${server.address().port}`, PANELCTL_TOKEN: 'code-cache', PANELCTL_CONFIG_DIR: join(dir, 'no-config') });
    cli.main(['node', 'panelctl', ...args]);
  });
}

if (require.main === module) loadCli(bundleFor(process.argv.slice(2))).cli.main(process.argv);
else module.exports = { loadCli, writeCodeCache, bundleFor, commandOf, VALUE_OPTIONS };
