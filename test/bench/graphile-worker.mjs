// The peer of the PostgreSQL dispatch benchmark: a graphile-worker 0.17 process whose one task
// makes the same signed POST a panelctl delivery makes, configured as graphile-worker's
// performance page configures it (24 concurrent jobs, a pool of 25, a local queue of 500, job
// completions and failures sent at once). Logging is off but for errors, as the daemon runs at
// `--log-level error`; BENCH_GRAPHILE_LOGGER=default keeps graphile-worker's own logger (a line
// per job on stdout, which goes to a file). Started by graphile.mjs with DATABASE_URL and BENCH_CA.
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Logger, run } from 'graphile-worker';
import { Agent, request } from 'undici';

const agent = new Agent({ connect: { ca: readFileSync(process.env.BENCH_CA, 'utf8') }, connections: 64 });
const logger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});

const runner = await run({
  connectionString: process.env.DATABASE_URL,
  concurrency: 24,
  maxPoolSize: 25,
  ...(process.env.BENCH_GRAPHILE_LOGGER === 'default' ? {} : { logger }),
  preset: { worker: { concurrentJobs: 24, maxPoolSize: 25, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  taskList: {
    async deliver({ url, secret, event, data }) {
      const body = JSON.stringify({ event, timestamp: new Date().toISOString(), data });
      const res = await request(url, {
        method: 'POST',
        body,
        dispatcher: agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Panel-WebPanel-Webhook/1.0',
          'x-webhook-event': event,
          'x-webhook-delivery': randomUUID(),
          'x-webhook-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
        },
      });
      await res.body.dump();
      if (res.statusCode >= 300) throw new Error(`receiver answered ${res.statusCode}`);
    },
  },
});
process.stderr.write('ready\n');
await runner.promise;
await agent.close();
