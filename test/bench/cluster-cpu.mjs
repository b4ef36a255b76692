// The CPU of a PostgreSQL cluster, read from /proc: shared by the benchmarks that measure the
// database's part of their work (graphile.mjs, postgres.mjs, dispatch-inproc.mjs, which runs
// under plain node and so imports nothing written in TypeScript).
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';

/** The postmaster's pid: the parent of this connection's backend. */
export async function postmasterPid(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
    const stat = await readFile(`/proc/${rows[0].pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } finally {
    await client.end();
  }
}

/** CPU seconds of the cluster: the postmaster (with its reaped children) and every live child. */
export async function clusterCpu(postmaster) {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry);
    if (pid === postmaster) total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    else if (Number(fields[1]) === postmaster) total += Number(fields[11]) + Number(fields[12]);
  }
  return total / 100;
}
