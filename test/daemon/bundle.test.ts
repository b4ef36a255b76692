// `daemon start` runs the daemon from its bundle (dist/daemon-bundle/daemon.js, made by
// scripts/build.mjs with the packages it loads) through bin/daemon-loader.js, with the V8 code
// cache the build made: the daemon the tests start, and the service runs, loads no module of
// dist/ or node_modules, so nothing of the daemon is loaded twice.
import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';
import { moduleLog, type ModuleLog } from '../helpers/module-log.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist/daemon-bundle/daemon.js');
const LOADER = join(ROOT, 'bin/daemon-loader.js');

/** Runs `code` in a fresh node with the loader as `loader`; its stdout. */
function withLoader(loader: string, code: string): { stdout: string; stderr: string } {
  const child = spawnSync(process.execPath, ['-e', `const loader = require(${JSON.stringify(loader)}); ${code}`], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  return { stdout: child.stdout, stderr: child.stderr };
}

/** The newest modification time of the files under `dir`. */
async function newest(dir: string): Promise<number> {
  let latest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return latest;
}

describe('the daemon runs from its bundle', () => {
  let dir: string;
  let modules: ModuleLog;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-daemon-bundle-'));
    modules = await moduleLog(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('daemon start loads the two loaders and nothing else of ours or of node_modules, and serves the API, its document and the docs page', async () => {
    const daemon = await startDaemon({ env: { NODE_OPTIONS: modules.nodeOptions } });
    try {
      expect((await daemon.request('GET', '/health')).body.data.status).toBe('ok');
      const document = await daemon.request('GET', '/api/docs/openapi.json');
      expect(document.status).toBe(200);
      expect(document.body.openapi).toBe('3.1.0');
      // swagger-ui's assets are read from its package directory, found from the bundle.
      const page = await daemon.request('GET', '/api/docs/');
      expect(page.status).toBe(200);
      expect(page.text).toContain('panelctl API reference');
      const asset = await daemon.request('GET', '/api/docs/static/swagger-ui-bundle.js');
      expect(asset.status).toBe(200);
      expect(asset.text.length).toBeGreaterThan(100_000);
      expect(await daemon.stop()).toBe(0);
    } finally {
      await daemon.dispose();
    }
    const loaded = await modules.loaded();
    expect(new Set(loaded)).toEqual(new Set(['bin/panelctl.js', 'bin/daemon-loader.js']));
  });

  it('the code cache made by the build is accepted by this Node', () => {
    const { stdout, stderr } = withLoader(LOADER, 'process.stdout.write(String(loader.compile().usedCache))');
    expect(stderr).toBe('');
    expect(stdout).toBe('true');
  });

  it('is current after npm run build: newer than every source, made by a build of the inputs as they are, and exporting what dist/daemon/entry.js does', async () => {
    const built = Math.min((await stat(BUNDLE)).mtimeMs, (await stat(`${BUNDLE}.cache`)).mtimeMs);
    expect(await newest(join(ROOT, 'src'))).toBeLessThan(built);
    // The build inputs (package-lock.json, the loaders, …) count by content, as the build counts
    // them: `npm install` rewrites the lockfile unchanged after its build has run.
    const stamp = JSON.parse(await readFile(join(ROOT, 'dist/.build-stamp'), 'utf8')) as { started: string; inputs: string };
    const { inputsDigest } = (await import(pathToFileURL(join(ROOT, 'scripts/build-inputs.mjs')).href)) as { inputsDigest(root: string): string };
    expect(stamp.inputs, 'the build inputs changed since the last build').toBe(inputsDigest(ROOT));
    expect(Date.parse(stamp.started)).toBeLessThanOrEqual(built);
    const entry = Object.keys(await import(pathToFileURL(join(ROOT, 'dist/daemon/entry.js')).href)).sort();
    const { stdout } = withLoader(LOADER, 'process.stdout.write(JSON.stringify(Object.keys(loader.loadDaemon()).sort()))');
    expect(JSON.parse(stdout)).toEqual(entry);
  });

  it('a cache made from other source is not used, even for a source of the same length', async () => {
    const copy = join(dir, 'copy');
    await cp(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    await cp(join(ROOT, 'dist/daemon-bundle'), join(copy, 'dist/daemon-bundle'), { recursive: true });
    await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    const file = join(copy, 'dist/daemon-bundle/daemon.js');
    const source = await readFile(file, 'utf8');
    const before = 'is already initialised';
    const after = 'IS ALREADY INITIALISED';
    expect(source).toContain(before);
    await writeFile(file, source.replace(before, after));
    const { stdout, stderr } = withLoader(
      join(copy, 'bin/daemon-loader.js'),
      "const { usedCache, daemon } = loader.compile(); process.stdout.write(JSON.stringify({ usedCache, message: new daemon.AlreadyInitialisedError('D').message }))",
    );
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual({ usedCache: false, message: `D ${after}` });
  });
});
