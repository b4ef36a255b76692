// listen, watch, daemon status, completion and usage in process (fake IO; listen over a fake
// event stream). Their real-process walks: listen.test.tsx, test/tui/watch-e2e.test.ts,
// first-hour.test.ts, closed-pipe.test.ts.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { useFakeApi } from './helpers.js';

const SESSION = { session_id: 'ls-1', endpoint_id: 12, events: '*', secret: 'ab'.repeat(32) };
const PUSH = { delivery_id: '3f1c2a9e-8b4d-4e2f-9a61-0c7d5e4b8a12', event: 'site.created', headers: { 'x-webhook-event': 'site.created' }, body: '{"event":"site.created","data":{"site_id":5}}' };

const { api, dir, cli } = useFakeApi({ PANELCTL_TOKEN: 'jwt' });

describe('listen', () => {
  it('prints each pushed event, reports it as received, and exits 4 naming why when the daemon ends the session for its credential', async () => {
    api.onStream('/events/listen?events=site.created%2Csite.deleted');
    api.on('POST', '/events/listen/ls-1/results', { data: { ok: true } });
    const running = cli(['listen', '--events', 'site.created,site.deleted']);
    const stream = await api.streamOpened();
    stream.send('session', SESSION);
    stream.send('webhook', PUSH);
    await vi.waitFor(() => expect(api.sent('POST', '/events/listen/ls-1/results')).toHaveLength(1));
    stream.body.end(': ended: authentication required\n\n');
    const result = await running;
    expect(result.stderr).toContain('Ready: events * are delivered to this session (webhook 12), printing them here. Ctrl-C to stop.');
    expect(result.stderr).toContain(`Signing secret of this session (X-Webhook-Signature): ${SESSION.secret}`);
    expect(result.stdout.split('\t').slice(1)).toEqual(['site.created', PUSH.delivery_id, `${PUSH.body}\n`]);
    expect(api.sent('POST', '/events/listen/ls-1/results')[0].body).toEqual({ delivery_id: PUSH.delivery_id, status_code: 200, duration_ms: 0 });
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('panelctl: the daemon ended the listen session: authentication required');
  });

  it('--json: the session and each event as JSON lines; a stream that just ends is exit 1', async () => {
    api.onStream(/^\/events\/listen/);
    api.on('POST', '/events/listen/ls-1/results', { data: { ok: true } });
    const running = cli(['--json', 'listen']);
    const stream = await api.streamOpened();
    stream.send('session', SESSION);
    stream.send('webhook', PUSH);
    await vi.waitFor(() => expect(api.sent('POST', '/events/listen/ls-1/results')).toHaveLength(1));
    stream.end();
    const result = await running;
    expect(result.stdout.trim().split('\n').map((line) => JSON.parse(line))).toEqual([
      { type: 'session', ...SESSION },
      { type: 'event', delivery_id: PUSH.delivery_id, event: 'site.created', headers: PUSH.headers, body: JSON.parse(PUSH.body) },
    ]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr.trim().split('\n').at(-1)!).message).toBe('the daemon ended the listen session (stopped or restarted)');
  });

  it('a refused stream is the API error and its exit code; a bad --forward-to is a usage error before any request', async () => {
    api.onStream(/^\/events\/listen/, 403, { error: 'forbidden', message: 'admins only' });
    const refused = await cli(['listen']);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('admins only');
    const bad = await cli(['listen', '--forward-to', 'ftp://x']);
    expect(bad.code).toBe(2);
    expect(api.requests).toHaveLength(1);
  });
});

describe('watch, daemon status, completion', () => {
  it('watch without a terminal is a usage error pointing to deliveries --follow --json, before any request', async () => {
    const result = await cli(['watch']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('webhooks deliveries');
    expect(api.requests).toEqual([]);
  });

  it('daemon status where none runs: exit 1 naming the data directory (the error envelope with --json), no request', async () => {
    const human = await cli(['daemon', 'status']);
    expect(human).toMatchObject({ code: 1, stdout: '', stderr: `panelctl: the daemon is not running (${join(dir, 'data')})\n` });
    const json = await cli(['--json', 'daemon', 'status']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({ data: null, error: 'cli error', message: `the daemon is not running (${join(dir, 'data')})` });
    expect(api.requests).toEqual([]);
  });

  it('completion prints the script of each shell; an unknown shell is exit 2', async () => {
    expect((await cli(['completion', 'bash'])).stdout).toContain('complete -F');
    expect((await cli(['completion', 'zsh'])).stdout).toMatch(/^#compdef panelctl/);
    expect((await cli(['completion', 'fish'])).stdout).toContain('complete -c panelctl');
    expect((await cli(['completion', 'tcsh'])).code).toBe(2);
  });
});
