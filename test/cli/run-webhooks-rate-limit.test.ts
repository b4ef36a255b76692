// `webhooks create|update --rate-limit N|none` in process against a fake API: the body sent, the
// record shown, and a malformed value refused as a usage error (exit 2) before any request.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';
import { FakeApi } from '../helpers/fake-api.js';

const ENDPOINT = {
  id: 5,
  user_id: 1,
  url: 'https://hooks.example/in',
  events: '*',
  active: true,
  signature: 'seed',
  health: { consecutive_failures: 0, last_success_at: null, last_failure_at: null, last_failure_reason: null, success_rate: null, next_attempt_at: null },
  created_at: '2025-05-01T12:00:00.000Z',
  updated_at: '2025-05-01T12:00:00.000Z',
  retry_schedule: [2],
  max_in_flight: 8,
  rate_limit_per_second: null,
};

let configDir: string;
let api: FakeApi;

beforeEach(async () => {
  configDir = await mkdtemp(join(tmpdir(), 'panelctl-cfg-'));
  api = new FakeApi();
});
afterEach(async () => {
  api.verify();
  await rm(configDir, { recursive: true, force: true });
});

const cli = (args: string[]) => runInProcess(args, { api, env: { PANELCTL_CONFIG_DIR: configDir, PANEL_DATA_DIR: join(configDir, 'data'), PANELCTL_TOKEN: 'jwt' } });
const echo = (req: { body?: any }) => ({ data: { ...ENDPOINT, ...req.body, secret: undefined } });

describe('webhooks --rate-limit', () => {
  it('create sends rate_limit_per_second and the record shows it; update --rate-limit none sends null', async () => {
    api.on('POST', '/webhooks', echo);
    api.on('PUT', '/webhooks/5', echo);
    const created = await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--secret', 's', '--rate-limit', '5']);
    expect(created.code, created.stderr).toBe(0);
    expect(api.sent('POST', '/webhooks')[0].body).toMatchObject({ rate_limit_per_second: 5 });
    expect(created.stdout).toMatch(/rate limit\s*: 5\/s/);
    const lifted = await cli(['webhooks', 'update', '5', '--rate-limit', 'none']);
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(api.sent('PUT', '/webhooks/5')[0].body).toEqual({ rate_limit_per_second: null });
    expect(lifted.stdout).toMatch(/rate limit\s*: none/);
  });

  it('refuses a value that is not a whole number or "none" with exit 2, sending nothing', async () => {
    for (const bad of ['', '0', '2.5', 'fast', '-1']) {
      const refused = await cli(['webhooks', 'update', '5', '--rate-limit', bad]);
      expect([bad, refused.code]).toEqual([bad, 2]);
      expect(refused.stderr).toMatch(/rate-limit/);
    }
  });
});
