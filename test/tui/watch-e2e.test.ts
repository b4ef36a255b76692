// End to end: the BUILT `panelctl watch` in a real terminal (tmux), against a real daemon
// delivering to real HTTPS receivers on loopback, read back with `tmux capture-pane`.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { startLoggedIn, type TestDaemon } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

const run = promisify(execFile);
const TMUX = ['/usr/bin/tmux', '/usr/local/bin/tmux'].find((path) => spawnSync(path, ['-V']).status === 0);
if (!TMUX) console.warn('skipping the watch end-to-end test: tmux is not installed (.ci/run installs it)');

const COLUMNS = 120;
const ROWS = 30;

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

describe.skipIf(!TMUX)('panelctl watch in a real terminal (tmux)', () => {
  let dir: string;
  let socket: string;
  let daemon: TestDaemon;
  let token: string;
  let tls: ReceiverTls;
  let ok: Receiver;
  let failing: Receiver;
  let okId: number;
  let failId: number;

  const tmux = (...args: string[]) => run(TMUX!, ['-S', socket, ...args], { encoding: 'utf8' });
  const screen = async (colours = false) => (await tmux('capture-pane', '-p', ...(colours ? ['-e'] : []), '-t', 'watch')).stdout;

  /** Waits for a screen on which `check` holds; fails with the last screen in the message. */
  const screenUntil = (what: string, check: (text: string) => boolean, timeoutMs = 20_000): Promise<string> =>
    vi.waitFor(
      async () => {
        const text = await screen();
        if (!check(text)) throw new Error(`the screen never showed ${what}; last screen:\n${text}`);
        return text;
      },
      { timeout: timeoutMs, interval: 100 },
    );

  const rowsOf = (text: string, endpointId: number) => text.split('\n').filter((line) => line.includes(` #${endpointId} 127.0.0.1:`));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-watch-e2e-'));
    socket = join(dir, 'tmux.sock');
    tls = await makeReceiverTls();
    ok = await startReceiver(tls, () => ({ status: 200, body: 'thanks' }));
    failing = await startReceiver(tls, () => ({ status: 500, body: 'receiver exploded' }));

    ({ daemon, admin: token } = await startLoggedIn({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } }));
    const create = async (url: string) => {
      const created = await daemon.request('POST', '/webhooks', { token, body: { url, events: '*', secret: 'watch-e2e-secret' } });
      expect(created.status, created.text).toBe(201);
      return created.body.data.id as number;
    };
    okId = await create(ok.url);
    failId = await create(failing.url);
  }, 60_000);

  afterAll(async () => {
    if (socket) await tmux('kill-server').catch(() => undefined);
    await daemon?.dispose();
    await ok?.close();
    await failing?.close();
    await tls?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shows a successful and a failing delivery with their codes, marks the failure and its retry, reconnects after a daemon restart, and q exits 0', async () => {
    // CI=true on purpose: watch must still draw live (ink goes quiet when it sees CI).
    const env = [
      `PANELCTL_URL=${daemon.url}`,
      `PANELCTL_TOKEN=${token}`,
      `PANELCTL_CA=${join(daemon.dataDir, 'tls', 'cert.pem')}`,
      `PANELCTL_CONFIG_DIR=${join(dir, 'config')}`,
      'LANG=C.UTF-8',
      'CI=true',
    ].map(shellQuote);
    const command = `env -u NO_COLOR -u FORCE_COLOR ${env.join(' ')} ${shellQuote(process.execPath)} ${shellQuote(BIN)} watch; echo EXIT=$?; sleep 120`;
    const launched = Date.now();
    await tmux('-u', '-f', '/dev/null', 'new-session', '-d', '-s', 'watch', '-x', String(COLUMNS), '-y', String(ROWS), command);

    let text = await screenUntil('the connected header', (t) => t.includes('● connected'));
    // From the terminal's start to `connected`: node, the CLI, ink and the stream (under 1 s on a
    // quiet machine; the bound is generous for a loaded one). The screen is polled every 100 ms.
    const toConnected = Date.now() - launched;
    console.info(`watch: ${toConnected} ms from start to "connected"`);
    expect(toConnected).toBeLessThan(5000);
    expect(text).toContain(`panelctl watch ${daemon.url}`);
    expect(text).toContain('waiting for deliveries');
    expect(text).toContain('q quit');

    // One test event to each endpoint (each answers once its first attempt is logged).
    for (const id of [okId, failId]) {
      const sent = await daemon.request('POST', `/webhooks/${id}/test`, { token });
      expect(sent.status, sent.text).toBe(200);
    }
    text = await screenUntil('both rows', (t) => rowsOf(t, okId).length >= 1 && rowsOf(t, failId).length >= 1);
    const okRow = rowsOf(text, okId)[0];
    expect(okRow).toMatch(/webhook\.test\s+1\/2\s+200\s+\d+ms\s+✓ ok/);
    expect(rowsOf(text, failId)[0]).toMatch(/webhook\.test\s+1\/2\s+500\s+\S+\s+✗ (retrying|FAILED)/);

    // The retry comes 2 s later: marked as a retry, and the delivery as failed.
    text = await screenUntil('the retry of the failing delivery', (t) => rowsOf(t, failId).length >= 2);
    const [retryRow, firstRow] = rowsOf(text, failId);
    expect(retryRow).toMatch(/webhook\.test\s+2\/2↻\s+500\s+\S+\s+✗ FAILED/);
    expect(firstRow).toMatch(/1\/2\s+500\s+\S+\s+✗ FAILED/);
    expect(text).toMatch(/3 sent · 1 ok · 2 failed · 0 retry pending/);

    // Failures in red, successes in green.
    const coloured = await screen(true);
    const colouredRow = (id: number) => coloured.split('\n').find((line) => line.includes(`#${id} 127.0.0.1:`)) ?? '';
    expect(colouredRow(failId)).toMatch(/\x1b\[31m\s*500/);
    expect(colouredRow(okId)).toMatch(/\x1b\[32m\s*200/);

    // The detail pane of the selected (newest) row: the retry's delivery id and its answer.
    const entries = await daemon.request('GET', `/webhooks/${failId}/deliveries`, { token });
    const retryEntry = entries.body.data.find((e: { attempt: number }) => e.attempt === 2);
    await tmux('send-keys', '-t', 'watch', 'Enter');
    text = await screenUntil('the detail pane', (t) => t.includes('Headers sent'));
    expect(text).toContain(`Delivery ${retryEntry.delivery_id}`);
    expect(text).toContain(`X-Webhook-Delivery: ${retryEntry.delivery_id}`); // the headers sent
    expect(text).toContain('"message":'); // the payload, pretty
    expect(text).toContain('receiver exploded'); // the response body
    await tmux('send-keys', '-t', 'watch', 'Escape');
    await screenUntil('the table again', (t) => t.includes('RESULT'));

    // The daemon goes away and comes back on the same port: the view says so and follows again.
    await daemon.kill();
    await screenUntil('the reconnecting state', (t) => t.includes('↻ reconnecting'));
    daemon = await daemon.restart();
    await screenUntil('connected again', (t) => t.includes('● connected'));
    const again = await daemon.request('POST', `/webhooks/${okId}/test`, { token });
    expect(again.status, again.text).toBe(200);
    await screenUntil('the delivery made after the restart', (t) => rowsOf(t, okId).length >= 2);

    await tmux('send-keys', '-t', 'watch', 'q');
    text = await screenUntil('the exit status', (t) => t.includes('EXIT='));
    expect(text).toContain('EXIT=0');
    // The terminal is given back: the full-screen view is gone from it.
    expect(text).not.toContain('RESULT');
  }, 90_000);
});
