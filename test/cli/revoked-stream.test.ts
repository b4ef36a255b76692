// The CLI's side of revocation: `panelctl listen` with an API key that is deleted while it runs
// stops at once, says why, and exits 4 (authentication refused), not "the daemon stopped".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { cliSession, spawnCli, type CliSession } from './helpers.js';

describe('a revoked credential ends panelctl listen', () => {
  let daemon: TestDaemon;
  let cli: CliSession;

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon);
  });
  afterAll(async () => {
    await daemon?.dispose();
    await cli?.dispose();
  });

  it('exits 4 naming the reason when its API key is deleted', async () => {
    const admin = await daemon.login();
    const created = await daemon.request('POST', '/auth/api-keys', { token: admin, body: { name: 'listen key' } });
    expect(created.status, created.text).toBe(201);
    const listen = spawnCli(['--data-dir', daemon.dataDir, '--url', daemon.url, '--token', created.body.data.key, 'listen'], cli.env);
    await listen.waitForStderr(/Ready:/);
    const removed = await daemon.request('DELETE', `/auth/api-keys/${created.body.data.id}`, { token: admin });
    expect(removed.status, removed.text).toBe(200);
    const { code, stderr } = await listen.done;
    expect(code, stderr).toBe(4);
    expect(stderr).toContain('the daemon ended the listen session: authentication required');
  });
});
