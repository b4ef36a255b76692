// The daemon's loader. `npm run build` bundles the daemon (src/daemon/entry.ts: the daemon, the
// store and every package they load) into one script, dist/daemon-bundle/daemon.js, and writes
// V8's code cache of it beside it (daemon.js.cache) after a daemon start: compiled here with that
// cache, a start neither resolves, reads and links some 1,200 module files nor compiles them
// again (scripts/build.mjs, bundleDaemon; docs/decisions/daemon-start.md). The CLI's bundle
// requires this file for `daemon start`; everything else of the daemon is loaded from dist/ as
// before. CommonJS (bin/package.json), as the CLI's loader.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
// Module.createRequire is node:module's createRequire, without loading the public node:module.
const { createRequire } = module.constructor;
const { join } = require('node:path');
const vm = require('node:vm');

const dir = join(__dirname, '..', 'dist', 'daemon-bundle');
const file = join(dir, 'daemon.js');
const cacheFile = `${file}.cache`;

/**
 * Compiles and runs daemon.js, with the cache when it was made from this very source (the cache
 * file holds that source's length, 4 bytes, the source, then V8's data: compared byte for byte,
 * as bin/panelctl.js does for the CLI). V8 ignores a cache from another Node version or other
 * flags (`script.cachedDataRejected`): the source is compiled then, as without a cache.
 */
function compile({ useCache = true } = {}) {
  const bytes = readFileSync(file);
  let cachedData;
  if (useCache) {
    try {
      const cache = readFileSync(cacheFile);
      const end = 4 + bytes.length;
      if (cache.length > end && cache.readUInt32LE(0) === bytes.length && cache.subarray(4, end).equals(bytes)) cachedData = cache.subarray(end);
    } catch {
      // no cache: compile the source
    }
  }
  const script = new vm.Script(bytes.toString('utf8'), { filename: file, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dir);
  return { daemon: module.exports, script, bytes, usedCache: cachedData !== undefined && !script.cachedDataRejected };
}

let loaded;

/** The daemon's entry (src/daemon/entry.ts), loaded once per process. */
function loadDaemon() {
  loaded ??= compile().daemon;
  return loaded;
}

/**
 * Run by scripts/build.mjs in a child process: the code cache after a daemon started on the
 * initialised data directory `dataDir` (JSON store, TLS) and answered GET /api/v1/health.
 */
async function writeCodeCache(dataDir) {
  const { daemon, script, bytes } = compile({ useCache: false });
  const running = await daemon.runDaemon({ dataDir, host: '127.0.0.1', port: 0, tls: true, logLevel: 'warn', logFile: join(dataDir, 'daemon.log') });
  let data;
  try {
    const https = require('node:https');
    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'));
    const status = await new Promise((resolve, reject) => {
      https
        .get(`${running.state.url}/api/v1/health`, { ca }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode));
        })
        .on('error', reject);
    });
    if (status !== 200) throw new Error(`GET /api/v1/health answered ${status}`);
    // Before the shutdown: what it compiles is no start's work.
    data = script.createCachedData();
  } finally {
    await running.shutdown();
  }
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.length);
  writeFileSync(cacheFile, Buffer.concat([length, bytes, data]));
}

module.exports = { compile, loadDaemon, writeCodeCache };
