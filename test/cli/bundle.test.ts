// The built CLI runs from its bundle (dist/cli-bundle/, made by scripts/build.mjs): a
// `keys list --json` loads a few bundle chunks and the shared modules it needs from dist/, and
// nothing else of ours or of node_modules (commander is in the bundle; ink, react, chalk, conf
// and undici are not loaded at all). The daemon and store code a command uses comes from dist/
// itself, so no module of ours is loaded twice.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the built CLI runs from its bundle', () => {
  let daemon: TestDaemon;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    daemon = await startDaemon();
    dir = await mkdtemp(join(tmpdir(), 'panelctl-bundle-'));
    // A module hook recording every module the CLI resolves (hooks run off the main thread: a file).
    const log = join(dir, 'modules.log');
    await writeFile(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
      export async function resolve(specifier, context, next) {
        const result = await next(specifier, context);
        appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
        return result;
      }\n`,
    );
    await writeFile(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
    env = {
      PANELCTL_URL: daemon.url,
      PANELCTL_TOKEN: await daemon.login(),
      PANEL_DATA_DIR: daemon.dataDir,
      PANELCTL_CONFIG_DIR: dir,
      NODE_OPTIONS: `--import=${join(dir, 'register.mjs')}`,
    };
  });
  afterAll(async () => {
    await daemon?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('keys list --json loads bundle chunks, the shared modules it needs, and no package', async () => {
    const result = await runCli(['keys', 'list', '--json'], { env });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
    const urls = (await readFile(join(dir, 'modules.log'), 'utf8')).trim().split('\n');
    const ours = urls.filter((url) => url.startsWith('file:') && !url.includes(join(dir, '/'))).map((url) => fileURLToPath(url).slice(ROOT.length));
    expect(ours).toContain('bin/panelctl.js');
    expect(ours).toContain('dist/cli-bundle/main.js');
    // Only the bundle and the shared modules of dist/: no unbundled CLI module, nothing from node_modules.
    expect(ours.filter((path) => !/^(bin\/panelctl\.js|dist\/cli-bundle\/[\w-]+\.js|dist\/(shared|daemon)\/[\w/-]+\.js)$/.test(path))).toEqual([]);
    expect(ours.filter((path) => path.startsWith('dist/daemon/'))).toEqual(['dist/daemon/lock.js']);
    // The chunks of one command, not the whole command tree.
    expect(new Set(ours.filter((path) => path.startsWith('dist/cli-bundle/'))).size).toBeLessThanOrEqual(12);
  });

  it('daemon and store code comes from dist/, where the tests and the service load it', async () => {
    const status = await runCli(['daemon', 'status', '--json'], { env: { ...env, PANEL_DATA_DIR: daemon.dataDir } });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true });
    const urls = (await readFile(join(dir, 'modules.log'), 'utf8')).trim().split('\n');
    expect(urls).toContain(pathToFileURL(join(ROOT, 'dist/daemon/state-file.js')).href);
  });
});
