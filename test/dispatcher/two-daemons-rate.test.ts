// An endpoint's rate limit over two daemons on one PostgreSQL database: one schedule for both,
// kept by the endpoint's holder (its cap holds over both daemons). A minute of its own, so it is
// a file of its own and runs beside the other two-daemon tests.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgAdminUrl } from '../helpers/postgres-db.js';
import { startReceiver } from '../helpers/receiver.js';
import { startTwoDaemons, type TwoDaemons } from './two-daemons-fixture.js';

const { url: adminUrl, reason } = pgAdminUrl();

if (!adminUrl) console.warn(`two-daemon rate test skipped: ${reason}`);

describe.skipIf(!adminUrl)('an endpoint rate limit over two daemons on one PostgreSQL database', () => {
  let pair: TwoDaemons | undefined;

  beforeAll(async () => {
    pair = await startTwoDaemons('panelctl_two_rate');
  }, 120_000);

  afterAll(() => pair?.dispose());

  it('holds an endpoint at 5 per second over both daemons: 300 events queued up front arrive over 60 s ± 10 %', async () => {
    const { tls, one, two, tokens, databaseUrl } = pair!;
    const paced = await startReceiver(tls);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      // Paused while the 300 are queued, so what is measured is the drain of a full queue (the
      // rate), not how fast they were published.
      const created = await one.request('POST', '/webhooks', {
        token: tokens[0],
        body: { url: paced.url, secret: 'paced-secret', events: 'database.created', rate_limit_per_second: 5, paused: true },
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.data.id as number;
      const daemons = [one, two];
      for (let start = 0; start < 300; start += 50) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            daemons[i % 2].request('POST', '/admin/events', { token: tokens[i % 2], body: { event: 'database.created', data: { database_id: start + i + 1, name: `db-${start + i}` } } }),
          ),
        );
        for (const answer of answers) expect(answer.status, answer.text).toBe(200);
      }
      const resumed = await two.request('PUT', `/webhooks/${id}`, { token: tokens[1], body: { paused: false } });
      expect(resumed.status, resumed.text).toBe(200);
      // Which daemons lease the endpoint's deliveries while it drains: one, the endpoint's holder
      // (its default cap of 8 is held over both), which follows the one shared schedule.
      const owners = new Set<string>();
      const sampling = (async () => {
        while (paced.requests.length < 300) {
          const { rows } = await client.query<{ owner: string }>(
            "SELECT DISTINCT lease_owner AS owner FROM deliveries WHERE endpoint_id = $1 AND state = 'pending' AND lease_owner IS NOT NULL",
            [id],
          );
          for (const row of rows) owners.add(row.owner);
          await paced.waitFor(paced.requests.length + 1, 30_000).catch(() => undefined);
        }
      })();
      const arrived = await paced.waitForProgress(300, 30_000);
      await sampling;
      const seconds = (arrived[299].at - arrived[0].at) / 1000;
      console.log(`rate limit 5/s over two daemons: 300 deliveries, first to last ${seconds.toFixed(1)} s (${(299 / seconds).toFixed(2)}/s)`);
      expect(new Set(arrived.map((r) => r.headers['x-webhook-delivery'])).size).toBe(300);
      // 299 steps of 200 ms: 59.8 s.
      expect(seconds).toBeGreaterThanOrEqual(54);
      expect(seconds).toBeLessThanOrEqual(66);
      expect(owners.size).toBe(1);
    } finally {
      await client.end();
      await paced.close();
    }
  }, 240_000);
});
