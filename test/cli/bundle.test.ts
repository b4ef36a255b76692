// The built CLI runs from its bundle (dist/cli-bundle/cli.js, made by scripts/build.mjs) with
// the V8 code cache the build made beside it, or, for a command of a listing family, from that
// family's own bundle (cli.keys.js, …): a `keys list --json` loads bin/panelctl.js and nothing
// else of ours or of node_modules (commander and src/shared are in the bundle; ink, react, chalk,
// conf and undici are not loaded at all). The daemon and store code a command uses comes from
// dist/ itself, so no daemon or store module is loaded twice.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { moduleLog, type ModuleLog } from '../helpers/module-log.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLES = join(ROOT, 'dist/cli-bundle');
/** The loader's routing, as bin/panelctl.js exports it when required. */
const loader = createRequire(import.meta.url)(join(ROOT, 'bin/panelctl.js')) as {
  commandOf(args: string[]): string | null;
  bundleFor(args: string[]): { file: string };
  VALUE_OPTIONS: Set<string>;
};
/** Whether `file`'s code cache is accepted when the loader compiles it, in a process of its own. */
const cacheRejected = (loaderFile: string, file: string) =>
  spawnSync(process.execPath, ['-e', `process.stdout.write(String(require(${JSON.stringify(loaderFile)}).loadCli({ file: ${JSON.stringify(file)} }).script.cachedDataRejected))`], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
/** The CLI of a copied tree (`copy`, holding bin/ and dist/cli-bundle/) run with `args`, without the module log. */
const runCopy = (copy: string, args: string[]) =>
  spawnSync(process.execPath, [join(copy, 'bin/panelctl.js'), ...args], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });

describe('the built CLI runs from its bundle', () => {
  let daemon: TestDaemon;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let modules: ModuleLog;
  const log = () => modules.file;
  /** Every module of ours the CLI loaded, relative to the repository: ES modules and CommonJS (and require(esm)) ones. */
  const loaded = () => modules.loaded();
  /**
   * A preload that notes in a file when `process[stream]` is first created (then restores its
   * getter), and the environment that runs the CLI with it.
   */
  const probeStream = async (stream: 'stdout' | 'stderr'): Promise<{ created: string; probed: NodeJS.ProcessEnv }> => {
    const created = join(dir, `${stream}.log`);
    const probe = join(dir, `${stream}-probe.cjs`);
    await writeFile(
      probe,
      `const own = Object.getOwnPropertyDescriptor(process, '${stream}');
      Object.defineProperty(process, '${stream}', { configurable: true, enumerable: own.enumerable, get() {
        require('node:fs').appendFileSync(${JSON.stringify(created)}, 'created\\n');
        Object.defineProperty(process, '${stream}', own);
        return own.get.call(process);
      } });\n`,
    );
    await rm(created, { force: true });
    return { created, probed: { ...env, NODE_OPTIONS: `--require=${probe}` } };
  };

  beforeAll(async () => {
    daemon = await startDaemon();
    dir = await mkdtemp(join(tmpdir(), 'panelctl-bundle-'));
    modules = await moduleLog(dir);
    env = {
      PANELCTL_URL: daemon.url,
      PANELCTL_TOKEN: await daemon.login(),
      PANEL_DATA_DIR: daemon.dataDir,
      PANELCTL_CONFIG_DIR: dir,
      NODE_OPTIONS: modules.nodeOptions,
    };
  });
  afterAll(async () => {
    await daemon?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('keys list --json loads the loader and nothing else of ours or of node_modules', async () => {
    await rm(log(), { force: true });
    const result = await runCli(['keys', 'list', '--json'], { env });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
    expect(new Set(await loaded())).toEqual(new Set(['bin/panelctl.js']));
  });

  it('keys list --json never creates process.stderr (a socket of its own on a pipe); an error still reaches it', async () => {
    const { created, probed } = await probeStream('stderr');
    const result = await runCli(['keys', 'list', '--json'], { env: probed });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
    await expect(readFile(created, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    const usage = await runCli(['keys', 'lst'], { env: probed });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("unknown command 'lst'");
    expect(await readFile(created, 'utf8')).toBe('created\n');
  });

  it('keys list --json writes its answer to a pipe without creating process.stdout; human output still uses the stream', async () => {
    const { created, probed } = await probeStream('stdout');
    const expected = await runCli(['keys', 'list', '--json'], { env });
    const result = await runCli(['keys', 'list', '--json'], { env: probed });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(expected.stdout);
    expect(result.stdout).toBe('[]\n');
    await expect(readFile(created, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    const human = await runCli(['daemon', 'status'], { env: probed });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(daemon.url);
    expect(await readFile(created, 'utf8')).toBe('created\n');
  });

  it('a refused connection loads daemon/lock.js from dist/ when it needs it, for its advice', async () => {
    await rm(log(), { force: true });
    const result = await runCli(['keys', 'list'], { env: { ...env, PANELCTL_URL: 'https://127.0.0.1:1' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The daemon of ${daemon.dataDir} runs at ${daemon.url}`);
    expect((await loaded()).filter((path) => path.startsWith('dist/'))).toEqual(['dist/daemon/lock.js']);
  });

  it('daemon and store code comes from dist/, where the tests and the service load it', async () => {
    await rm(log(), { force: true });
    const status = await runCli(['daemon', 'status', '--json'], { env });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true });
    expect(await loaded()).toContain('dist/daemon/state-file.js');
  });

  it("--version prints package.json's version (a constant of the bundle, made by the build)", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version'], { env });
    expect(result.stdout).toBe(`${version}\n`);
    expect(result.code).toBe(0);
  });

  it('the code cache the build made of each bundle is accepted by this Node', async () => {
    const bundles = (await readdir(BUNDLES)).filter((name) => name.endsWith('.js'));
    expect(bundles).toEqual(expect.arrayContaining(['cli.js', 'cli.keys.js', 'cli.webhooks.js']));
    for (const name of bundles) {
      const child = cacheRejected(join(ROOT, 'bin/panelctl.js'), join(BUNDLES, name));
      expect(child.stderr, name).toBe('');
      expect(child.stdout, name).toBe('false');
    }
  });

  it("a listing family's command runs from the family's bundle, which holds no other family's commands", async () => {
    const keys = await readFile(join(BUNDLES, 'cli.keys.js'), 'utf8');
    const whole = await readFile(join(BUNDLES, 'cli.js'), 'utf8');
    expect(keys).toMatch(/\bfunction keysListCommand\b/);
    for (const other of ['webhooksListCommand', 'sitesListCommand', 'daemonStatusCommand', 'watchCommand', 'initCommand']) {
      expect(whole, other).toMatch(new RegExp(`\\bfunction ${other}\\b`));
      expect(keys, other).not.toMatch(new RegExp(`\\bfunction ${other}\\b`));
    }
    expect(keys.length).toBeLessThan(whole.length / 2);
    // Shown by what runs: a description changed in the keys bundle only is what `keys --help`
    // prints, while `help keys` (help is the whole CLI's) still prints the original.
    const copy = join(dir, 'routed');
    await cp(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    await cp(BUNDLES, join(copy, 'dist/cli-bundle'), { recursive: true });
    const before = 'create, list and delete API keys';
    const after = 'CREATE, LIST AND DELETE API KEYS';
    await writeFile(join(copy, 'dist/cli-bundle/cli.keys.js'), keys.replace(before, after));
    const run = (...args: string[]) => runCopy(copy, args);
    for (const args of [['keys', '--help'], ['--json', 'keys', '--help'], ['--url', 'https://127.0.0.1:1', 'keys', '--help']]) {
      expect(run(...args).stdout, args.join(' ')).toContain(after);
    }
    for (const args of [['help', 'keys'], ['--url', 'keys', 'help', 'keys']]) {
      const child = run(...args);
      expect(child.stdout, args.join(' ')).toContain(before);
      expect(child.status).toBe(0);
    }
    // Without a bundle of its own a family runs from cli.js, as does everything else.
    await rm(join(copy, 'dist/cli-bundle/cli.keys.js'));
    expect(run('keys', '--help').stdout).toContain(before);
  });

  it('the loader finds the command as the program does, and knows the global options that take a value', async () => {
    const { buildProgram, targetCommand } = (await import(pathToFileURL(join(ROOT, 'dist/cli/program.js')).href)) as typeof import('../../src/cli/program.js');
    const { program } = await buildProgram();
    const valueOptions = program.options.filter((option) => option.required || option.optional).flatMap((option) => [option.long, option.short].filter(Boolean));
    expect(new Set(valueOptions)).toEqual(loader.VALUE_OPTIONS);
    const lines = [
      ['keys', 'list'],
      ['--json', 'keys', 'list'],
      ['--url', 'https://x', 'keys', 'list'],
      ['--url=https://x', 'webhooks', 'list'],
      ['--token', 'keys', 'sites', 'list'],
      ['--data-dir', '/d', '--ca', '/c', 'users', 'list'],
      ['--no-color', '-x', 'subscriptions'],
      ['help', 'keys'],
      ['--', 'keys', 'list'],
      ['--url'],
      ['-V'],
      ['nosuch', 'keys'],
      [],
    ];
    const routed = [];
    for (const args of lines) {
      // A family's bundle is chosen only for a line whose command the program finds to be that
      // family: its program never needs another. Anything else (help, nothing, an unknown
      // word) runs from the whole CLI.
      const bundle = basename(loader.bundleFor(args).file);
      const target = targetCommand(program, args);
      if (bundle !== 'cli.js') {
        expect(bundle, args.join(' ')).toBe(`cli.${target}.js`);
        expect(loader.commandOf(args)).toBe(target);
        routed.push(args.join(' '));
      }
    }
    expect(routed).toEqual(['keys list', '--json keys list', '--url https://x keys list', '--url=https://x webhooks list', '--token keys sites list', '--data-dir /d --ca /c users list', '--no-color -x subscriptions']);
    expect(loader.bundleFor(['--token', 't', 'webhooks', 'list']).file).toBe(join(BUNDLES, 'cli.webhooks.js'));
    expect(loader.bundleFor(['../../etc/passwd']).file).toBe(join(BUNDLES, 'cli.js'));
  });

  it('a copy of the bundle (a cli.js of another ctime than the cache names) still uses the cache once its source compares equal', async () => {
    const copy = join(dir, 'same');
    await cp(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    await cp(BUNDLES, join(copy, 'dist/cli-bundle'), { recursive: true });
    const child = cacheRejected(join(copy, 'bin/panelctl.js'), join(copy, 'dist/cli-bundle/cli.js'));
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('false');
  });

  it.each([
    ['cli.js', ['help', 'keys']],
    ['cli.keys.js', ['keys', '--help']],
  ])('a cache made from other source is not used, even for a source of the same length (%s)', async (bundle, args) => {
    const copy = join(dir, `copy-${bundle}`);
    await cp(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    await cp(BUNDLES, join(copy, 'dist/cli-bundle'), { recursive: true });
    const file = join(copy, 'dist/cli-bundle', bundle);
    const source = await readFile(file, 'utf8');
    const before = 'create, list and delete API keys';
    const after = 'CREATE, LIST AND DELETE API KEYS';
    expect(source).toContain(before);
    await writeFile(file, source.replace(before, after));
    const child = runCopy(copy, args);
    expect(child.stdout).toContain(after);
    expect(child.status).toBe(0);
  });

  it.each([
    ['cli.js', ['help', 'keys']],
    ['cli.keys.js', ['keys', '--help']],
  ])('a damaged cache file is ignored: the source is compiled (%s)', async (bundle, args) => {
    const copy = join(dir, `damaged-${bundle}`);
    await cp(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true });
    await cp(BUNDLES, join(copy, 'dist/cli-bundle'), { recursive: true });
    const file = join(copy, 'dist/cli-bundle', bundle);
    const cacheFile = `${file}.cache`;
    const cache = await readFile(cacheFile);
    // Cut inside the source it holds, then inside V8's data: neither is used as a cache.
    for (const length of [2, 1000, cache.length - 1000]) {
      await writeFile(cacheFile, cache.subarray(0, length));
      const child = cacheRejected(join(copy, 'bin/panelctl.js'), file);
      expect(child.stderr).toBe('');
      expect(child.stdout, `cache cut at ${length} bytes`).not.toBe('false');
      const help = runCopy(copy, args);
      expect(help.stdout).toContain('create, list and delete API keys');
      expect(help.status).toBe(0);
    }
  });

  it('the bundle holds no class of src/shared: a copy of one would not be the class daemon code uses', async () => {
    const source = await readFile(join(BUNDLES, 'cli.js'), 'utf8');
    for (const name of ['errors', 'events', 'paths', 'settings', 'version', 'page-limit', 'webhook-protocol', 'log-format', 'email', 'hostname', 'envelope']) {
      const module = (await import(pathToFileURL(join(ROOT, 'dist/shared', `${name}.js`)).href)) as Record<string, unknown>;
      for (const [exported, value] of Object.entries(module)) {
        if (typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value))) {
          expect(source, `class ${exported} of shared/${name}`).not.toMatch(new RegExp(`\\b(class ${exported}\\b|${exported}=class\\b)`));
        }
      }
    }
  });
});
