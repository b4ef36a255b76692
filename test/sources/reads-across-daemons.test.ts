// Two daemons on one PostgreSQL database, each keeping cached reads (site listings, callers of
// API keys and JWTs): a change made through one is served by the other's very next request. The change's
// notice reaches the other daemon a moment after the commit, so each case is repeated many times
// back to back, alternating the daemons, where a write not waiting for the other's fence (or a
// cache trusting notices alone) would show the race.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_PASSWORD, createDatabaseWithAdmin, initDataDir, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { pgAdminUrl } from '../helpers/postgres-db.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';

const { url: adminUrl, reason } = pgAdminUrl();
const ROUNDS = 60;

if (!adminUrl) console.warn(`reads across daemons skipped: ${reason}`);

describe.skipIf(!adminUrl)('cached reads on two daemons of one PostgreSQL database', () => {
  let daemons: [TestDaemon, TestDaemon];
  /** Per daemon: the admin's JWT, and API keys of the admin and of a customer (kept on warm connections). */
  let jwts: [string, string];
  let adminKey: string;
  let customerKey: string;
  let subscriptionId: number;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createDatabaseWithAdmin(adminUrl!, 'panelctl_reads');
    const dirs = [await makeDataDir(), await makeDataDir()];
    await initDataDir(dirs[0], ADMIN_PASSWORD, databaseUrl);
    daemons = (await Promise.all(dirs.map((dataDir) => startDaemon({ dataDir, databaseUrl })))) as [TestDaemon, TestDaemon];
    jwts = [await daemons[0].login(), await daemons[1].login()];
    const [one] = daemons;
    const settings = await one.request('PUT', '/admin/settings', { token: jwts[0], body: { rate_limit_user_per_minute: 1_000_000, rate_limit_login_per_minute: 100_000 } });
    expect(settings.status, settings.text).toBe(200);
    const customer = await one.request('POST', '/admin/users', {
      token: jwts[0],
      body: { email: 'reads@example.com', name: 'Reads', password: 'reads-password-1', role: 'customer' },
    });
    expect(customer.status, customer.text).toBe(201);
    const subscription = await one.request('POST', '/admin/subscriptions', { token: jwts[0], body: { customer_id: customer.body.data.id, main_domain: 'reads.example.com' } });
    expect(subscription.status, subscription.text).toBe(201);
    subscriptionId = subscription.body.data.id;
    adminKey = (await one.request('POST', '/auth/api-keys', { token: jwts[0], body: { name: 'reads-admin' } })).body.data.key;
    const customerJwt = await one.login('reads@example.com', 'reads-password-1');
    customerKey = (await one.request('POST', '/auth/api-keys', { token: customerJwt, body: { name: 'reads-customer' } })).body.data.key;
  }, 120_000);

  afterAll(async () => {
    await daemons?.[0]?.dispose();
    await daemons?.[1]?.dispose();
  });

  const domainsOn = async (daemon: TestDaemon, token: string, query = ''): Promise<string[]> => {
    const listed = await daemon.request('GET', `/sites${query}`, { token });
    expect(listed.status, listed.text).toBe(200);
    return (listed.body.data as Array<{ domain: string }>).map((site) => site.domain);
  };

  it(`serves a site created or deleted on one daemon in the other's next listing (${ROUNDS} rounds each way)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const [writer, reader] = round % 2 === 0 ? daemons : [daemons[1], daemons[0]];
      const domain = `r${round}.reads.example.com`;
      // The reader's listings are memoised before the change (each view asked twice), and the
      // writer's own: no notice tells either of a site (both learn it from their next question).
      for (let i = 0; i < 2; i++) {
        expect(await domainsOn(reader, customerKey)).not.toContain(domain);
        expect(await domainsOn(reader, adminKey, `?subscription_id=${subscriptionId}`)).not.toContain(domain);
        expect(await domainsOn(reader, adminKey)).not.toContain(domain);
        expect(await domainsOn(writer, customerKey)).not.toContain(domain);
      }
      const created = await writer.request('POST', '/sites', { token: customerKey, body: { domain } });
      expect(created.status, created.text).toBe(201);
      expect(await domainsOn(reader, customerKey)).toContain(domain);
      expect(await domainsOn(reader, adminKey, `?subscription_id=${subscriptionId}`)).toContain(domain);
      expect(await domainsOn(reader, adminKey)).toContain(domain);
      expect(await domainsOn(writer, customerKey)).toContain(domain);
      const deleted = await writer.request('DELETE', `/sites/${created.body.data.id}`, { token: adminKey });
      expect(deleted.status, deleted.text).toBe(200);
      expect(await domainsOn(reader, adminKey)).not.toContain(domain);
      expect(await domainsOn(reader, customerKey)).not.toContain(domain);
      expect(await domainsOn(writer, customerKey)).not.toContain(domain);
    }
  }, 300_000);

  it(`refuses an API key deleted on one daemon at the other's next request (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const [writer, reader] = round % 2 === 0 ? daemons : [daemons[1], daemons[0]];
      const writerJwt = jwts[daemons.indexOf(writer)];
      const created = await writer.request('POST', '/auth/api-keys', { token: writerJwt, body: { name: `doomed-${round}` } });
      expect(created.status, created.text).toBe(201);
      const { id, key } = created.body.data as { id: number; key: string };
      // Known to the reader (its caller remembered on the connection) before it is deleted.
      for (let i = 0; i < 3; i++) expect((await reader.request('GET', '/sites', { token: key })).status).toBe(200);
      const deleted = await writer.request('DELETE', `/auth/api-keys/${id}`, { token: writerJwt });
      expect(deleted.status, deleted.text).toBe(200);
      const refused = await reader.request('GET', '/sites', { token: key });
      expect(refused.status, refused.text).toBe(401);
      expect(refused.body.error).toBe('not authenticated');
    }
  }, 300_000);

  it(`shows an endpoint changed on one daemon in the other's next GET /webhooks/:id (${ROUNDS} rounds)`, async () => {
    const created = await daemons[0].request('POST', '/webhooks', {
      token: adminKey,
      body: { url: 'https://hooks.example.com/r', secret: 'reads-secret', events: 'site.created' },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as number;
    for (let round = 0; round < ROUNDS; round++) {
      const [writer, reader] = round % 2 === 0 ? daemons : [daemons[1], daemons[0]];
      expect((await reader.request('GET', `/webhooks/${id}`, { token: adminKey })).status).toBe(200);
      const url = `https://hooks.example.com/r${round}`;
      const events = round % 3 === 0 ? '*' : round % 3 === 1 ? 'site.created,site.deleted' : 'site.deleted';
      const updated = await writer.request('PUT', `/webhooks/${id}`, { token: adminKey, body: { url, events, active: round % 2 === 0 } });
      expect(updated.status, updated.text).toBe(200);
      const shown = await reader.request('GET', `/webhooks/${id}`, { token: adminKey });
      expect(shown.status, shown.text).toBe(200);
      expect(shown.body.data).toMatchObject({ url, events, active: round % 2 === 0 });
      const listed = await reader.request('GET', '/webhooks', { token: adminKey });
      expect((listed.body.data as Array<{ id: number; url: string }>).find((hook) => hook.id === id)?.url).toBe(url);
    }
  }, 300_000);

  it(`refuses a JWT logged out on one daemon at the other's next request (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const [writer, reader] = round % 2 === 0 ? daemons : [daemons[1], daemons[0]];
      const session = await writer.login();
      const other = jwts[daemons.indexOf(reader)];
      // Known to the reader (its caller cached) before it is logged out.
      for (let i = 0; i < 3; i++) expect((await reader.request('GET', '/auth/me', { token: session })).status).toBe(200);
      const logout = await writer.request('POST', '/auth/logout', { token: session });
      expect(logout.status, logout.text).toBe(200);
      const refused = await reader.request('GET', '/auth/me', { token: session });
      expect(refused.status, refused.text).toBe(401);
      expect(refused.body.error).toBe('not authenticated');
      // The admin's other session is not logged out.
      expect((await reader.request('GET', '/auth/me', { token: other })).status).toBe(200);
    }
  }, 300_000);

  it('serves a role changed, a password changed and a user deleted elsewhere at the next request (JWT and key)', async () => {
    // A third handle on the database changes roles, as another daemon's admin tooling would:
    // the API has no route that changes a role.
    const tooling = await PostgresStore.open(databaseUrl);
    try {
      for (let round = 0; round < 10; round++) {
        const [writer, reader] = round % 2 === 0 ? daemons : [daemons[1], daemons[0]];
        const writerJwt = jwts[daemons.indexOf(writer)];
        const email = `turns-${round}@example.com`;
        const created = await writer.request('POST', '/admin/users', {
          token: writerJwt,
          body: { email, name: 'Turns', password: 'turns-password-1', role: 'customer' },
        });
        expect(created.status, created.text).toBe(201);
        const id = created.body.data.id as number;
        const jwt = await writer.login(email, 'turns-password-1');
        const key = (await writer.request('POST', '/auth/api-keys', { token: jwt, body: { name: 'turns' } })).body.data.key as string;
        for (const credential of [jwt, key]) {
          for (let i = 0; i < 2; i++) expect((await reader.request('GET', '/admin/users', { token: credential })).status).toBe(403);
        }

        await tooling.users.update(id, { role: 'admin' });
        for (const credential of [jwt, key]) {
          const listed = await reader.request('GET', '/admin/users', { token: credential });
          expect(listed.status, listed.text).toBe(200);
        }
        await tooling.users.update(id, { role: 'customer' });
        for (const credential of [jwt, key]) expect((await reader.request('GET', '/admin/users', { token: credential })).status).toBe(403);

        const changed = await writer.request('POST', `/admin/users/${id}/password`, { token: writerJwt, body: { password: 'turns-password-2' } });
        expect(changed.status, changed.text).toBe(200);
        const stale = await reader.request('GET', '/auth/me', { token: jwt });
        expect(stale.status, stale.text).toBe(401);
        expect((await reader.request('GET', '/auth/me', { token: key })).status).toBe(200);

        const deleted = await writer.request('DELETE', `/admin/users/${id}`, { token: writerJwt });
        expect(deleted.status, deleted.text).toBe(200);
        const gone = await reader.request('GET', '/auth/me', { token: key });
        expect(gone.status, gone.text).toBe(401);
      }
    } finally {
      await tooling.close();
    }
  }, 300_000);

  it('sees a logout, a role change and a key deletion written straight into the tables once their notice arrives', async () => {
    // Straight into the tables, as a script with no panelctl writer would: no write waits for the
    // daemons (the write fence), so the change is promised once its notice (the tables' trigger
    // sends one for writers other than panelctl) reaches the reader, not at the very next
    // request. Each is waited for, and must come.
    const sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
    try {
      const [reader] = daemons;
      const session = await daemons[1].login();
      const { jti, exp } = JSON.parse(Buffer.from(session.split('.')[1], 'base64url').toString()) as { jti: string; exp: number };
      const created = await daemons[1].request('POST', '/admin/users', {
        token: jwts[1],
        body: { email: 'silent@example.com', name: 'Silent', password: 'silent-password-1', role: 'customer' },
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.data.id as number;
      const jwt = await daemons[1].login('silent@example.com', 'silent-password-1');
      const key = (await daemons[1].request('POST', '/auth/api-keys', { token: jwt, body: { name: 'silent' } })).body.data.key as string;
      for (let i = 0; i < 2; i++) {
        expect((await reader.request('GET', '/auth/me', { token: session })).status).toBe(200);
        expect((await reader.request('GET', '/admin/users', { token: key })).status).toBe(403);
      }
      const statusOf = async (path: string, token: string) => (await reader.request('GET', path, { token })).status;
      const seen = { timeout: 10_000, interval: 20 };

      await sql.query('INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2)', [jti, exp * 1000]);
      await vi.waitFor(async () => expect(await statusOf('/auth/me', session)).toBe(401), seen);

      await sql.query("UPDATE users SET role = 'admin' WHERE id = $1", [id]);
      await vi.waitFor(async () => expect(await statusOf('/admin/users', key)).toBe(200), seen);
      expect(await statusOf('/admin/users', jwt)).toBe(200);

      await sql.query('DELETE FROM api_keys WHERE user_id = $1', [id]);
      await vi.waitFor(async () => expect(await statusOf('/auth/me', key)).toBe(401), seen);
      expect(await statusOf('/auth/me', jwt)).toBe(200);
    } finally {
      await sql.end();
    }
  }, 120_000);
});
