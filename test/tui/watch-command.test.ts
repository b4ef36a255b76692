// The built `panelctl watch` outside a terminal: it refuses and points to the scriptable
// command; and no other command loads ink or react.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runCli } from '../helpers/cli.js';

const RUN_MODULE = fileURLToPath(new URL('../../dist/cli/ui/run.js', import.meta.url));

describe('panelctl watch without a terminal', () => {
  it('refuses with exit 2 and points to webhooks deliveries --follow --json', async () => {
    const result = await runCli(['watch', '--endpoint', '3'], { env: { PANELCTL_TOKEN: 'x' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('watch needs an interactive terminal');
    expect(result.stderr).toContain('panelctl webhooks deliveries 3 --follow --json');
  });

  it('rejects a malformed --endpoint as a usage error', async () => {
    const result = await runCli(['watch', '--endpoint', 'abc']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('must be a positive integer');
  });
});

describe('ink and react are loaded by watch only', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-lazy-'));
    // A module hook that makes importing ink or react fail, registered before the CLI loads.
    await writeFile(
      join(dir, 'hooks.mjs'),
      `export async function resolve(specifier, context, next) {
        if (/^(ink|react)(\\/|$)/.test(specifier)) throw new Error('loaded ' + specifier);
        return next(specifier, context);
      }\n`,
    );
    await writeFile(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(`file://${dir}/hooks.mjs`)});\n`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the command tree (help) and a command run without them; watch is where they load', async () => {
    const env = { NODE_OPTIONS: `--import=${join(dir, 'register.mjs')}` };
    const help = await runCli(['--help'], { env });
    expect(help.stderr).toBe('');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('watch');
    const status = await runCli(['daemon', 'status', '--data-dir', dir], { env });
    expect(status.stderr).not.toContain('loaded');
    // The hook does catch them: importing the watch UI under it fails.
    const probe = spawnSync(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(RUN_MODULE)})`], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(probe.status).not.toBe(0);
    expect(probe.stderr).toMatch(/loaded (ink|react)/);
  });
});
