// What `panelctl daemon start` uses of the daemon and the store, in one module. The build
// bundles the daemon from here into one script (dist/daemon-bundle/daemon.js, with the packages
// it loads and a V8 code cache: scripts/build.mjs, bundleDaemon; docs/decisions/daemon-start.md),
// and the CLI's bundle sends `daemon start`'s import of this module to that script, so the
// command loads every daemon and store module from it and none from dist/daemon or dist/store.
export { AlreadyInitialisedError, initDataDir, isInitialised, prepareDataDir } from './init.js';
export { isDaemon, readPid } from './lock.js';
export { runDaemon, signalHandler } from './server.js';
export { unusedJsonStoreWarning } from './startup-checks.js';
export { describeDatabaseUrl } from '../store/factory.js';
