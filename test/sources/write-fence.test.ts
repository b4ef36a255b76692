// The write fence of two daemons on one PostgreSQL database (see PgChangeFeed): each serves its
// cached listings and callers without asking the database while its lease holds, so a write must
// not resolve before the other has dropped what it changed. What the lease is for is tested here
// with real processes: a daemon paused past its lease holds writes no longer than the lease and,
// resumed, serves no stale cache; a daemon starting while writes flow serves no stale read; a
// LISTEN connection cut under a write neither holds it nor lets a stale read through.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FENCE_LEASE_MS } from '../../src/store/postgres/feed.js';
import { ADMIN_PASSWORD, createDatabaseWithAdmin, initDataDir, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { pgAdminUrl } from '../helpers/postgres-db.js';

const { url: adminUrl, reason } = pgAdminUrl();

if (!adminUrl) console.warn(`write fence skipped: ${reason}`);

describe.skipIf(!adminUrl)('the write fence of two daemons of one PostgreSQL database', () => {
  let databaseUrl: string;
  let daemons: TestDaemon[] = [];
  let adminJwt: string;
  let customerKey: string;
  let adminKey: string;
  let sql: pg.Client;
  let round = 0;

  beforeAll(async () => {
    databaseUrl = await createDatabaseWithAdmin(adminUrl!, 'panelctl_fence');
    const dataDir = await makeDataDir();
    await initDataDir(dataDir, ADMIN_PASSWORD, databaseUrl);
    daemons = [await startDaemon({ dataDir, databaseUrl }), await startDaemon({ dataDir: await makeDataDir(), databaseUrl })];
    const [one] = daemons;
    adminJwt = await one.login();
    const settings = await one.request('PUT', '/admin/settings', { token: adminJwt, body: { rate_limit_user_per_minute: 1_000_000 } });
    expect(settings.status, settings.text).toBe(200);
    const customer = await one.request('POST', '/admin/users', {
      token: adminJwt,
      body: { email: 'fence@example.com', name: 'Fence', password: 'fence-password-1', role: 'customer' },
    });
    expect(customer.status, customer.text).toBe(201);
    const subscription = await one.request('POST', '/admin/subscriptions', { token: adminJwt, body: { customer_id: customer.body.data.id, main_domain: 'fence.example.com' } });
    expect(subscription.status, subscription.text).toBe(201);
    adminKey = (await one.request('POST', '/auth/api-keys', { token: adminJwt, body: { name: 'fence-admin' } })).body.data.key;
    const customerJwt = await one.login('fence@example.com', 'fence-password-1');
    customerKey = (await one.request('POST', '/auth/api-keys', { token: customerJwt, body: { name: 'fence-customer' } })).body.data.key;
    sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
  }, 120_000);

  afterAll(async () => {
    for (const daemon of daemons) {
      if (daemon.proc.exitCode === null) daemon.proc.kill('SIGCONT');
      await daemon.dispose();
    }
    await sql?.end();
  });

  const domainsOn = async (daemon: TestDaemon, token = customerKey): Promise<string[]> => {
    const listed = await daemon.request('GET', '/sites', { token });
    expect(listed.status, listed.text).toBe(200);
    return (listed.body.data as Array<{ domain: string }>).map((site) => site.domain);
  };
  const createOn = async (daemon: TestDaemon): Promise<{ domain: string; ms: number }> => {
    const domain = `f${round++}.fence.example.com`;
    const started = performance.now();
    const created = await daemon.request('POST', '/sites', { token: customerKey, body: { domain } });
    expect(created.status, created.text).toBe(201);
    return { domain, ms: performance.now() - started };
  };
  /** Whether `daemon` is a fence member with a lease (it joined at its first cached read). */
  const leased = async (daemon: TestDaemon): Promise<number> => {
    await domainsOn(daemon);
    const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM feed_members WHERE lease_until > (extract(epoch from clock_timestamp()) * 1000)::bigint');
    return rows[0].n;
  };

  it('holds a write no longer than the lease for a paused daemon, which serves no stale listing once resumed', async () => {
    const [writer, paused] = daemons;
    // Both are members with leases, and the paused one's listing is cached.
    await expect.poll(() => leased(paused), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await leased(writer);
    const before = await createOn(writer);
    expect(await domainsOn(paused)).toContain(before.domain);
    expect(await domainsOn(paused)).toContain(before.domain);

    paused.proc.kill('SIGSTOP');
    let resumed = false;
    try {
      // The write waits for the paused daemon's acknowledgement, which never comes, until its
      // lease ends: no longer than the lease after the commit (plus the request's own time).
      const during = await createOn(writer);
      expect(during.ms).toBeLessThan(FENCE_LEASE_MS + 2_500);
      // The next write waits for it no more: its lease was not renewed.
      const next = await createOn(writer);
      expect(next.ms).toBeLessThan(FENCE_LEASE_MS);
      // Resumed after its lease ended (the writes above resolved only once it had): its cache
      // predates both writes, and it must not serve it.
      paused.proc.kill('SIGCONT');
      resumed = true;
      const listed = await domainsOn(paused);
      expect(listed).toContain(during.domain);
      expect(listed).toContain(next.domain);
      expect(await domainsOn(paused, adminKey)).toContain(next.domain);
    } finally {
      if (!resumed) paused.proc.kill('SIGCONT');
    }
    // It renews and rejoins: writes wait for it again, and it acknowledges them.
    await expect.poll(() => leased(paused), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < 5; i++) {
      const after = await createOn(writer);
      expect(await domainsOn(paused)).toContain(after.domain);
    }
  }, 120_000);

  it('serves no stale listing on a daemon resumed past its lease, even of a change whose notice was lost', async () => {
    const [, paused] = daemons;
    await expect.poll(() => leased(paused), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const before = await domainsOn(paused);
    expect(await domainsOn(paused)).toEqual(before);
    // A writer that sends no notice at all (named as panelctl's connections are, so the tables'
    // trigger leaves the notice to it): only the paused daemon's lease protects its cache.
    const silent = new pg.Client({ connectionString: databaseUrl, application_name: 'panelctl' });
    await silent.connect();
    paused.proc.kill('SIGSTOP');
    let resumed = false;
    try {
      const domain = `silent${round++}.fence.example.com`;
      await silent.query(
        "INSERT INTO sites (subscription_id, domain, created_at) SELECT id, $1, '2026-01-01T00:00:00.000Z' FROM subscriptions WHERE main_domain = 'fence.example.com'",
        [domain],
      );
      // Until its lease has ended as the database sees it (the daemon's own ends sooner).
      await expect
        .poll(async () => (await sql.query('SELECT count(*)::int AS n FROM feed_members WHERE lease_until > (extract(epoch from clock_timestamp()) * 1000)::bigint')).rows[0].n, {
          timeout: 10_000,
          interval: 100,
        })
        .toBe(1);
      // Asked before it resumes (on a warm connection: the request waits in its socket), so the
      // request is read before anything the daemon sends on resuming can be answered.
      const listing = domainsOn(paused);
      await new Promise((resolve) => setImmediate(resolve));
      paused.proc.kill('SIGCONT');
      resumed = true;
      expect(await listing).toContain(domain);
    } finally {
      if (!resumed) paused.proc.kill('SIGCONT');
      await silent.end();
    }
  }, 60_000);

  it('serves no stale read on a daemon that starts while writes flow', async () => {
    const [writer] = daemons;
    const created: string[] = [];
    let writing = true;
    const writes = (async () => {
      while (writing) created.push((await createOn(writer)).domain);
    })();
    let late: TestDaemon | undefined;
    try {
      late = await startDaemon({ dataDir: await makeDataDir(), databaseUrl });
      daemons.push(late);
      // From its first request on (it joins the fence meanwhile), every site whose write resolved
      // before a listing was asked for is in it.
      for (let i = 0; i < 60; i++) {
        const known = [...created];
        const listed = await domainsOn(late);
        for (const domain of known) expect(listed).toContain(domain);
      }
    } finally {
      writing = false;
      await writes;
    }
    expect(await leased(late!)).toBeGreaterThanOrEqual(3);
    const last = await createOn(writer);
    expect(await domainsOn(late!)).toContain(last.domain);
  }, 120_000);

  it('neither holds a write nor serves a stale read when the LISTEN connections are cut under it', async () => {
    const [writer, reader] = daemons;
    const cut = () => sql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'panelctl-listen' AND datname = current_database()");
    // Each round waits out a lease (a cut member acknowledges nothing), so each puts several
    // writes, on both daemons, at different points of the cut: sent with it (cut before, during
    // or after their commit and notice, turn about which goes first) and sent once it is done
    // (while the connections are down or being made again).
    for (let i = 0; i < 3; i++) {
      await domainsOn(reader);
      await domainsOn(writer);
      const first = i % 2 === 0 ? writer : reader;
      const second = first === writer ? reader : writer;
      const cutFirst = i === 1 ? cut() : undefined;
      const withCut = [createOn(first), createOn(second)];
      const done = cutFirst ?? cut();
      const afterCut = done.then(() => [createOn(second), createOn(first)]);
      const sites = await Promise.all([...withCut, ...(await afterCut)]);
      for (const site of sites) expect(site.ms).toBeLessThan(FENCE_LEASE_MS + 2_500);
      const [onReader, onWriter] = [await domainsOn(reader), await domainsOn(writer)];
      for (const site of sites) {
        expect(onReader).toContain(site.domain);
        expect(onWriter).toContain(site.domain);
      }
    }
    // Both reconnect, rejoin, and writes are fenced again.
    await expect.poll(() => Promise.all(daemons.map(leased)).then((n) => Math.min(...n)), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    const after = await createOn(writer);
    expect(await domainsOn(reader)).toContain(after.domain);
  }, 120_000);
});
