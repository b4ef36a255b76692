// The webhook endpoint API as a client sees it: create, list, read, partial update with secret
// rotation, delete; validation (400 malformed, 422 invalid), ownership (403), and the secret
// never in an answer. Targets use the .invalid TLD, so nothing can ever be delivered. The app
// in-process: what a client sees of these routes is not the process's.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { TEST_STORE } from '../helpers/daemon.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customer, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

const URL_A = 'https://hooks.example.invalid/a';

describe.concurrent('webhook endpoints API', () => {
  let world: AppWorld;

  beforeAll(async () => {
    world = await startAppWorld(null, { allowPrivate: false });
  });
  afterAll(async () => {
    await world?.app.close();
  });

  it('creates, reads, lists, updates and deletes an endpoint without ever returning the secret', async () => {
    const { id: userId, token } = await customer(world);
    const created = await world.daemon.request('POST', '/webhooks', {
      token,
      body: { url: URL_A, secret: 'super-secret-value', events: ' site.created ,  domain.deleted,site.created ' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      data: {
        id: expect.any(Number),
        user_id: userId,
        url: URL_A,
        events: 'site.created,domain.deleted',
        active: true,
        signature: 'seed',
        health: { consecutive_failures: 0, last_success_at: null, last_failure_at: null, last_failure_reason: null, success_rate: null, next_attempt_at: null },
        created_at: expect.stringMatching(/Z$/),
        updated_at: created.body.data?.created_at,
        paused: false,
        paused_deliveries: 0,
        retry_schedule: [2],
        max_in_flight: 8,
        rate_limit_per_second: null,
      },
      error: null,
      message: expect.any(String),
    });
    const id = created.body.data.id;

    const read = await world.daemon.request('GET', `/webhooks/${id}`, { token });
    expect(read.body.data).toEqual(created.body.data);
    const list = await world.daemon.request('GET', '/webhooks', { token });
    expect(list.body.data).toEqual([created.body.data]);

    const deactivated = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { active: false } });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.data).toMatchObject({ id, active: false, url: URL_A, events: 'site.created,domain.deleted' });

    const changed = await world.daemon.request('PUT', `/webhooks/${id}`, {
      token,
      body: { url: 'https://other.example.invalid/b', events: '*', secret: 'rotated-secret-value' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ url: 'https://other.example.invalid/b', events: '*', active: false });
    expect(changed.body.message).toMatch(/secret rotated/);

    for (const answer of [created, read, list, deactivated, changed]) {
      expect(answer.text).not.toContain('super-secret-value');
      expect(answer.text).not.toContain('rotated-secret-value');
      expect(answer.text).not.toContain('"secret"');
    }

    const removed = await world.daemon.request('DELETE', `/webhooks/${id}`, { token });
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id });
    expect((await world.daemon.request('GET', `/webhooks/${id}`, { token })).status).toBe(404);
    expect((await world.daemon.request('GET', `/webhooks/${id}/deliveries`, { token })).status).toBe(404);
    expect((await world.daemon.request('DELETE', `/webhooks/${id}`, { token })).status).toBe(404);
  });

  it('answers 400 for missing or mistyped fields and 422 for invalid values, naming the field', async () => {
    const { token } = await customer(world);
    const cases: Array<[unknown, number, RegExp]> = [
      [{ secret: 's', events: '*' }, 400, /url/],
      [{ url: URL_A, events: '*' }, 400, /secret/],
      [{ url: URL_A, secret: 's' }, 400, /events/],
      [{ url: 5, secret: 's', events: '*' }, 400, /url/],
      [{ url: URL_A, secret: 's', events: '*', active: 'yes' }, 400, /active/],
      [{ url: URL_A, secret: 's', events: '*', owner: 1 }, 400, /owner/],
      [{ url: 'http://hooks.example.invalid/a', secret: 's', events: '*' }, 422, /url.*https/],
      [{ url: '/relative/path', secret: 's', events: '*' }, 422, /url.*absolute/],
      [{ url: 'ftp://hooks.example.invalid/', secret: 's', events: '*' }, 422, /url/],
      [{ url: 'https://user:pw@hooks.example.invalid/', secret: 's', events: '*' }, 422, /url.*credentials/],
      [{ url: URL_A, secret: '', events: '*' }, 422, /secret/],
      [{ url: URL_A, secret: 's', events: 'site.created,nope.happened' }, 422, /events.*nope\.happened/],
      [{ url: URL_A, secret: 's', events: '*,site.created' }, 422, /events/],
      [{ url: URL_A, secret: 's', events: 'site.created,,domain.created' }, 422, /events/],
    ];
    for (const [body, status, message] of cases) {
      const answer = await world.daemon.request('POST', '/webhooks', { token, body });
      expect([JSON.stringify(body), answer.status]).toEqual([JSON.stringify(body), status]);
      expect(answer.body.data).toBeNull();
      expect(answer.body.message).toMatch(message);
    }
    const id = (await world.daemon.request('POST', '/webhooks', { token, body: { url: URL_A, secret: 's', events: '*' } })).body.data.id;
    expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: {} })).status).toBe(400);
    expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { url: 'http://x.invalid/' } })).status).toBe(422);
    expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { events: 'bogus' } })).status).toBe(422);
    expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { active: 1 } })).status).toBe(400);
    expect((await world.daemon.request('GET', '/webhooks/abc', { token })).status).toBe(400);
  });

  it("refuses another customer's endpoint with 403 and lets admins manage every endpoint", async () => {
    const a = await customer(world);
    const b = await customer(world);
    const id = (await world.daemon.request('POST', '/webhooks', { token: a.token, body: { url: URL_A, secret: 's', events: '*' } })).body.data.id;
    for (const [method, path, body] of [
      ['GET', `/webhooks/${id}`],
      ['PUT', `/webhooks/${id}`, { active: false }],
      ['DELETE', `/webhooks/${id}`],
      ['GET', `/webhooks/${id}/deliveries`],
      ['POST', `/webhooks/${id}/test`],
      ['GET', `/webhooks/deliveries/stream?endpoint_id=${id}`],
    ] as const) {
      const answer = await world.daemon.request(method, path, { token: b.token, body });
      expect([method, path, answer.status, answer.body.error]).toEqual([method, path, 403, 'forbidden']);
    }
    expect((await world.daemon.request('GET', '/webhooks', { token: b.token })).body.data).toEqual([]);
    expect((await world.daemon.request('GET', `/webhooks?user_id=${a.id}`, { token: b.token })).status).toBe(403);
    expect((await world.daemon.request('GET', '/webhooks?all=true', { token: b.token })).status).toBe(403);
    expect((await world.daemon.request('GET', '/webhooks/999999', { token: b.token })).status).toBe(404);

    // Admins: their own list by default, a user's with user_id, everyone's with all.
    const own = await world.daemon.request('GET', '/webhooks', { token: world.admin });
    expect(own.body.data.every((w: any) => w.user_id !== a.id)).toBe(true);
    const ofA = await world.daemon.request('GET', `/webhooks?user_id=${a.id}`, { token: world.admin });
    expect(ofA.body.data.map((w: any) => w.id)).toEqual([id]);
    const all = await world.daemon.request('GET', '/webhooks?all=true', { token: world.admin });
    expect(all.body.data.map((w: any) => w.id)).toContain(id);
    const adminUpdate = await world.daemon.request('PUT', `/webhooks/${id}`, { token: world.admin, body: { active: false } });
    expect(adminUpdate.status).toBe(200);
    expect(adminUpdate.body.data.user_id).toBe(a.id);
    expect((await world.daemon.request('DELETE', `/webhooks/${id}`, { token: world.admin })).status).toBe(200);
  });

  it('refuses a literal private or loopback IP in the URL with 422 unless private targets are allowed', async () => {
    const { token } = await customer(world);
    const blocked = [
      'https://127.0.0.1/hook',
      'https://10.1.2.3/',
      'https://172.20.0.1/',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/',
      'https://0.0.0.0/',
      'https://[::1]/',
      'https://[fd00::1]/',
      'https://[fe80::1]/',
      'https://[::ffff:127.0.0.1]/',
      // IPv4 embedded in IPv6: translated, NAT64, compatible, 6to4 (issue 19).
      'https://[::ffff:0:127.0.0.1]/',
      'https://[::ffff:0:10.0.0.1]/',
      'https://[64:ff9b::127.0.0.1]/',
      'https://[64:ff9b::a9fe:a9fe]/',
      'https://[::127.0.0.1]/',
      'https://[2002:7f00:1::1]/',
      'https://[2002:c0a8:101::]/',
      'https://[::]/',
      'https://224.0.0.1/',
      'https://2130706433/', // 127.0.0.1 written as one number
      'https://0x7f.1/',
    ];
    for (const url of blocked) {
      const answer = await world.daemon.request('POST', '/webhooks', { token, body: { url, secret: 's', events: '*' } });
      expect([url, answer.status]).toEqual([url, 422]);
      expect(answer.body.message).toMatch(/^url: .* address; webhook targets in private networks are not allowed/);
    }
    const publicIp = await world.daemon.request('POST', '/webhooks', { token, body: { url: 'https://192.0.3.1/', secret: 's', events: '*' } });
    expect(publicIp.status).toBe(201);
    const update = await world.daemon.request('PUT', `/webhooks/${publicIp.body.data.id}`, { token, body: { url: 'https://127.0.0.1/' } });
    expect(update.status).toBe(422);
  });

  // The JSON store's per-endpoint files; PostgreSQL's log rows go by cascade (the contract suite).
  it.skipIf(TEST_STORE === 'postgres')('removes the delivery log file with the endpoint', async () => {
    const { token } = await customer(world);
    const id = (await world.daemon.request('POST', '/webhooks', { token, body: { url: URL_A, secret: 's', events: '*', active: false } })).body.data.id;
    // A test send to an unresolvable host: a failed attempt that is logged.
    const test = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({ success: false, status_code: 0, response: expect.stringMatching(/connection error/) });
    const logs = join(world.daemon.dataDir, 'deliveries');
    expect(await readdir(logs)).toContain(`${id}.jsonl`);
    expect((await world.daemon.request('DELETE', `/webhooks/${id}`, { token })).status).toBe(200);
    expect(await readdir(logs)).not.toContain(`${id}.jsonl`);
    // The retry, 2 s later, finds the endpoint gone and brings no log back. The marker: a second
    // endpoint's failed test, whose retry is due after that one and must be logged after it.
    const marker = (await world.daemon.request('POST', '/webhooks', { token, body: { url: URL_A, secret: 's', events: '*', active: false } })).body.data.id;
    expect((await world.daemon.request('POST', `/webhooks/${marker}/test`, { token })).body.data).toMatchObject({ success: false });
    await waitForEntries(world, token, marker, 2);
    expect(await readdir(logs)).not.toContain(`${id}.jsonl`);
  });
});
