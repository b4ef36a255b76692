// `npm run test:busy [-- [--runs N] [vitest args…]]`: the whole suite (`npm test`) under load, as
// on a loaded CI machine; once by default, N times in a row with `--runs N` (or BUSY_RUNS=N).
// Further arguments go to vitest (e.g. a file, for a quick check of the script).
//
// The load: one busy loop per core (`node -e 'for (;;) {}'`, BUSY_LOOPS to change the count; at
// normal priority, started before each run and killed after it), on top of the suite's own work
// (three test files at a time, their daemons, receivers and PostgreSQL cluster). On a 2-core
// machine the suite's processes share both cores with two that never sleep, so a process of the
// suite that wants a core gets about half of one at best: every timing in the suite stretches.
//
// Each run must pass, and leave no process behind: vitest's global teardown checks that, and so
// does this script, by a mark of its own in the environment of everything the run starts. Prints
// durations and outcomes; exits 1 if any run failed or leaked.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';

const { runs, vitestArgs: VITEST_ARGS } = parseArguments(process.argv.slice(2));
const RUNS = runs ?? Number(process.env.BUSY_RUNS ?? 1);
if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error(`test:busy: --runs must be a positive integer (got ${runs ?? process.env.BUSY_RUNS})`);
  process.exit(2);
}
const LOOPS = Number(process.env.BUSY_LOOPS ?? os.availableParallelism());
const MARK = 'PANELCTL_BUSY_RUN';

/** `--runs N` or `--runs=N` (anywhere), and the arguments left for vitest. */
function parseArguments(args) {
  let runs;
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--runs') runs = Number(args[++i]);
    else if (arg.startsWith('--runs=')) runs = Number(arg.slice('--runs='.length));
    else rest.push(arg);
  }
  return { runs, vitestArgs: rest };
}

/** Processes (other than this one) whose environment carries `MARK=id`. */
async function marked(id) {
  const needle = Buffer.from(`\0${MARK}=${id}\0`);
  const found = [];
  for (const name of await readdir('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = Buffer.concat([Buffer.from([0]), await readFile(`/proc/${pid}/environ`)]);
      if (environ.includes(needle)) found.push(`${pid} ${(await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim()}`);
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

function busyLoops() {
  // Without the mark: they are this script's, not the suite's.
  return Array.from({ length: LOOPS }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

async function runSuite(id) {
  const started = performance.now();
  const child = spawn('npm', ['test', ...(VITEST_ARGS.length ? ['--', ...VITEST_ARGS] : [])], { env: { ...process.env, [MARK]: id }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
    process.stdout.write(chunk);
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
    process.stderr.write(chunk);
  });
  const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, seconds: (performance.now() - started) / 1000, output };
}

const results = [];
for (let run = 1; run <= RUNS; run++) {
  const id = randomUUID();
  const loops = busyLoops();
  console.log(`\n=== test:busy run ${run} of ${RUNS}: npm test with ${LOOPS} busy loops (load average ${os.loadavg()[0].toFixed(1)}) ===\n`);
  let result;
  try {
    result = await runSuite(id);
  } finally {
    for (const loop of loops) loop.kill('SIGKILL');
  }
  // Give stopped processes a moment; anything with the mark still alive after that leaked.
  let left = await marked(id);
  for (let i = 0; i < 25 && left.length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    left = await marked(id);
  }
  const plain = result.output.replace(/\x1b\[[0-9;]*m/g, '');
  const tests = /^\s*Tests\s+(.*)$/m.exec(plain)?.[1]?.trim() ?? 'no summary';
  const teardown = /leak check: [^\n]*/.exec(plain)?.[0] ?? 'leak check: no report';
  results.push({ run, code: result.code, seconds: result.seconds, tests, teardown, left });
  if (left.length) {
    console.error(`leaked by run ${run}:\n  ${left.join('\n  ')}`);
    for (const line of left) {
      try {
        process.kill(Number(line.split(' ')[0]), 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
  }
}

console.log('\n=== test:busy summary ===');
console.log('| run | exit | duration | tests | teardown | left alive (script check) |');
console.log('|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.run} | ${r.code} | ${Math.floor(r.seconds / 60)} min ${Math.round(r.seconds % 60)} s | ${r.tests} | ${r.teardown} | ${r.left.length} |`);
}
const ok = results.every((r) => r.code === 0 && r.left.length === 0);
console.log(ok ? `${RUNS === 1 ? "the run" : `all ${RUNS} runs`} green, nothing left alive` : 'FAILED: a run was red or left processes alive');
process.exit(ok ? 0 : 1);
