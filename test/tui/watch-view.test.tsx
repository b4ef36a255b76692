// Component tests of `panelctl watch`: the app rendered into ink-testing-library's fake
// terminal, fed by a scripted source, driven by key presses on its stdin.
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, render } from 'ink-testing-library';
import { WatchApp } from '../../src/cli/ui/app.js';
import { formatTime } from '../../src/cli/ui/format.js';
import { initialState, reducer, WatchStore } from '../../src/cli/ui/state.js';
import { WatchView } from '../../src/cli/ui/view.js';
import { ENDPOINTS, entry, KEYS, NOW, ScriptedSource, trackFrames } from './fixtures.js';

afterEach(() => cleanup());

const SIZE = { columns: 100, rows: 20 };

function mount(options: { endpointId?: number; failedOnly?: boolean; rows?: number } = {}) {
  const source = new ScriptedSource();
  const store = new WatchStore(initialState({ baseUrl: 'https://127.0.0.1:3443', endpointId: options.endpointId, failedOnly: options.failedOnly }));
  const app = render(
    <WatchApp
      source={source}
      store={store}
      baseUrl="https://127.0.0.1:3443"
      color={false}
      size={{ ...SIZE, rows: options.rows ?? SIZE.rows }}
      clock={() => NOW}
    />,
  );
  const frame = () => app.lastFrame() ?? '';
  const lines = () => frame().split('\n');
  const rendered = trackFrames(app, store);
  /** Resolves once the app has started its source (and reads keys) and the screen shows the store's current state. */
  const shown = async () => {
    await vi.waitFor(() => expect(source.started).toBe(1));
    await rendered();
  };
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      app.stdin.write(key);
      // ink takes most keys as they are written; a lone Esc (maybe the start of a sequence) it
      // passes on from a setImmediate queued by that write, which runs before this one.
      if (key === KEYS.escape) await new Promise((resolve) => setImmediate(resolve));
      await shown();
    }
  };
  return { app, source, store, frame, lines, press, shown };
}

const rowOf = (lines: string[], text: string) => lines.find((line) => line.includes(text)) ?? '';

describe('watch view: rows from entries', () => {
  it('renders one row per attempt, newest on top, with time, endpoint id and host, event, attempt, code, duration and result', async () => {
    const { source, lines, frame, shown } = mount();
    await shown();
    const ok = entry({ id: 10, endpoint_id: 1, event: 'site.created', status_code: 200, duration_ms: 42, success: true });
    const failed = entry({ id: 11, endpoint_id: 2, event: 'subscription.suspended', status_code: 500, duration_ms: 1530, success: false, delivery_id: 'dx' });
    source.dispatch({ type: 'endpoints', endpoints: ENDPOINTS });
    source.dispatch({ type: 'entries', entries: [ok, failed] });
    await shown();

    const table = lines();
    const okRow = rowOf(table, 'site.created');
    const failedRow = rowOf(table, 'subscription.suspended');
    expect(okRow).toContain(formatTime(ok.created_at));
    expect(okRow).toMatch(/#1 ok\.example\.test\/hooks\s+site\.created\s+1\/2\s+200\s+42ms\s+✓ ok/);
    expect(failedRow).toMatch(/#2 broken\.example\.test:8443\/in\s+subscription\.suspended\s+1\/2\s+500\s+1\.5s\s+✗ retrying/);
    // Newest on top: entry 11 is a second later than entry 10.
    expect(table.indexOf(failedRow)).toBeLessThan(table.indexOf(okRow));
    expect(frame()).toContain('TIME');
    expect(frame()).toContain('RESULT');
  });

  it('marks retries (attempt 2/2↻) and a failure once its retry also failed; a connection error shows ERR', async () => {
    const { source, lines, shown } = mount();
    await shown();
    source.dispatch({
      type: 'entries',
      entries: [
        entry({ id: 20, delivery_id: 'same', attempt: 1, status_code: 503, success: false }),
        entry({ id: 21, delivery_id: 'same', attempt: 2, status_code: 0, success: false, duration_ms: 10_000 }),
      ],
    });
    await shown();
    const retry = rowOf(lines(), '2/2↻');
    expect(retry).toMatch(/ERR\s+10\.0s\s+✗ FAILED/);
    // The first attempt is no longer "retrying": its retry has been seen.
    expect(rowOf(lines(), '503')).toContain('✗ FAILED');
  });

  it('shows the daemon URL, the connection state and the counts of the last minutes in the header', async () => {
    const { source, frame, lines, shown } = mount({ endpointId: 2 });
    await shown();
    expect(lines()[0]).toContain('https://127.0.0.1:3443');
    expect(lines()[0]).toContain('endpoint #2');
    expect(lines()[0]).toContain('connecting');
    source.dispatch({ type: 'connection', state: 'connected' });
    source.dispatch({
      type: 'entries',
      entries: [
        entry({ id: 30, success: true }),
        entry({ id: 31, delivery_id: 'p', attempt: 1, success: false, status_code: 500 }),
        entry({ id: 32, delivery_id: 'q', attempt: 1, success: false, status_code: 500 }),
        entry({ id: 33, delivery_id: 'q', attempt: 2, success: true }),
        // Outside the five-minute window: not counted.
        entry({ id: 34, success: false, created_at: new Date(NOW - 10 * 60_000).toISOString() }),
      ],
    });
    await shown();
    expect(lines()[0]).toContain('● connected');
    expect(lines()[1]).toContain('last 5 min: 4 sent · 2 ok · 2 failed · 1 retry pending');
    source.dispatch({ type: 'connection', state: 'reconnecting', detail: 'connection refused' });
    await shown();
    expect(frame()).toContain('↻ reconnecting: connection refused');
    // A long reason is cut to the line, never wrapped into the table.
    source.dispatch({ type: 'connection', state: 'reconnecting', detail: `cannot connect: ${'x'.repeat(300)}` });
    await shown();
    expect(lines()[0]).toContain('https://127.0.0.1:3443');
    expect(lines()[0].length).toBeLessThanOrEqual(SIZE.columns);
    expect(lines()[2]).toContain('TIME');
  });

  it('says it is waiting when there is nothing yet, and keeps the help line on screen', async () => {
    const { frame, lines, shown } = mount();
    await shown();
    expect(frame()).toContain('waiting for deliveries');
    expect(lines().at(-1)).toContain('q quit');
    expect(lines()).toHaveLength(SIZE.rows);
  });
});

describe('watch view: keys', () => {
  async function withRows(rows?: number) {
    const mounted = mount({ rows });
    await mounted.shown();
    mounted.source.dispatch({ type: 'endpoints', endpoints: ENDPOINTS });
    mounted.source.dispatch({
      type: 'entries',
      entries: [
        entry({ id: 40, event: 'site.created' }),
        entry({ id: 41, event: 'site.deleted', endpoint_id: 2, status_code: 500, success: false, response: '{"error":"boom"}' }),
        entry({ id: 42, event: 'backup.completed' }),
      ],
    });
    await mounted.shown();
    return mounted;
  }
  const selected = (lines: string[]) => lines.find((line) => line.startsWith('› ')) ?? '';

  it('selects with ↓/↑ and j/k, newest first', async () => {
    const { lines, press } = await withRows();
    expect(selected(lines())).toContain('backup.completed');
    await press(KEYS.down);
    expect(selected(lines())).toContain('site.deleted');
    await press('j');
    expect(selected(lines())).toContain('site.created');
    await press('j'); // stays on the last row
    expect(selected(lines())).toContain('site.created');
    await press('k', KEYS.up);
    expect(selected(lines())).toContain('backup.completed');
  });

  it('scrolls the table to keep the selection on screen (G/End to the oldest, g/Home back)', async () => {
    const { lines, press, source, shown } = mount({ rows: 10 });
    await shown();
    const events = ['site.created', 'site.deleted', 'domain.created', 'domain.deleted', 'database.created', 'database.deleted', 'email.created', 'ftp.created'];
    source.dispatch({ type: 'entries', entries: events.map((event, i) => entry({ id: 80 + i, event })) });
    await shown();
    expect(lines()).toHaveLength(10);
    expect(lines().join('\n')).not.toContain('site.created'); // the oldest, off screen
    await press('G');
    expect(selected(lines())).toContain('site.created');
    expect(lines().join('\n')).not.toContain('ftp.created');
    await press('g');
    expect(selected(lines())).toContain('ftp.created');
  });

  it('keeps the selected entry selected when newer entries arrive', async () => {
    const { lines, press, source, shown } = await withRows();
    await press('j');
    source.dispatch({ type: 'entries', entries: [entry({ id: 43, event: 'ftp.created' })] });
    await shown();
    expect(selected(lines())).toContain('site.deleted');
  });

  it('opens the detail pane with Enter (delivery id, headers sent, pretty payload, response) and closes it with Esc or Enter', async () => {
    const { frame, press, source } = await withRows(40);
    source.dispatch({
      type: 'entries',
      entries: [
        entry({
          id: 41,
          delivery_id: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
          event: 'site.deleted',
          endpoint_id: 2,
          status_code: 500,
          success: false,
          response: '{"error":"boom"}\x1b[2J\x1b]0;pwned\x07',
          request_headers: { 'Content-Type': 'application/json', 'X-Webhook-Delivery': '1b4e28ba-2fa1-11d2-883f-0016d3cca427' },
        }),
      ],
    });
    await press('j', KEYS.enter);
    const detail = frame();
    expect(detail).toContain('Delivery 1b4e28ba-2fa1-11d2-883f-0016d3cca427');
    expect(detail).toContain('Endpoint #2 https://broken.example.test:8443/in');
    expect(detail).toContain('Headers sent');
    expect(detail).toContain('X-Webhook-Delivery: 1b4e28ba-2fa1-11d2-883f-0016d3cca427');
    expect(detail).toContain('Payload');
    expect(detail).toContain('    "site_id": 7,'); // pretty JSON, indented under its heading
    expect(detail).toContain('Response body');
    expect(detail).toContain('{"error":"boom"}');
    // The receiver's terminal escapes are not passed to the terminal.
    expect(detail).not.toContain('\x1b[2J');
    expect(detail).not.toContain('pwned\x07');
    expect(detail).toContain('HTTP 500');
    expect(detail).toContain('Esc/⏎ close');
    await press(KEYS.escape);
    expect(frame()).not.toContain('Headers sent');
    expect(frame()).toContain('RESULT');
    await press(KEYS.enter);
    expect(frame()).toContain('Headers sent');
    await press(KEYS.enter);
    expect(frame()).not.toContain('Headers sent');
  });

  it('says when the daemon did not report the headers sent', async () => {
    const { frame, press } = await withRows();
    await press(KEYS.enter);
    expect(frame()).toContain('(not reported by this daemon)');
  });

  it('scrolls a long detail pane', async () => {
    const { frame, press, source, shown } = mount({ rows: 12 });
    await shown();
    const long = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
    source.dispatch({ type: 'entries', entries: [entry({ id: 50, response: long })] });
    await press(KEYS.enter);
    expect(frame()).not.toContain('line 39');
    await press('j', 'j', KEYS.pageDown, KEYS.pageDown, KEYS.pageDown, KEYS.pageDown, KEYS.pageDown, KEYS.pageDown, KEYS.pageDown, KEYS.pageDown);
    expect(frame()).toContain('line 39');
    await press('k');
    expect(frame()).not.toContain('line 39'); // clamped: one step back moves at once
  });

  it('toggles failed-only with f (and starts failed-only with --failed)', async () => {
    const { frame, press } = await withRows();
    await press('f');
    expect(frame()).toContain('site.deleted');
    expect(frame()).not.toContain('site.created');
    expect(frame()).not.toContain('backup.completed');
    expect(frame()).toContain('[failed only]');
    await press('f');
    expect(frame()).toContain('site.created');

    const failedFirst = mount({ failedOnly: true });
    await failedFirst.shown();
    failedFirst.source.dispatch({ type: 'entries', entries: [entry({ id: 60, event: 'email.created' })] });
    await failedFirst.shown();
    expect(failedFirst.frame()).not.toContain('email.created');
    expect(failedFirst.frame()).toContain('no attempt matches the filters');
  });

  it('filters by event name with /: typing shows in the status line, Enter applies, Esc clears', async () => {
    const { frame, press, lines } = await withRows();
    await press('/', 's', 'i', 't', 'e', 'x', KEYS.backspace, '.');
    expect(lines().at(-2)).toContain('/site.');
    // Keys are typed into the filter while it is open, not taken as commands.
    expect(frame()).toContain('backup.completed');
    await press(KEYS.enter);
    expect(frame()).toContain('site.created');
    expect(frame()).toContain('site.deleted');
    expect(frame()).not.toContain('backup.completed');
    expect(frame()).toContain('[event ~ "site."]');

    await press('/', KEYS.escape);
    expect(frame()).toContain('backup.completed');
    expect(frame()).not.toContain('event ~');
  });

  it('takes a burst of keys in one read one key at a time (tmux send-keys j j Enter)', async () => {
    const { frame, press } = await withRows(40);
    await press('jj\r');
    expect(frame()).toContain('Delivery d-40');
  });

  it('takes a pasted filter in one chunk', async () => {
    const { frame, press } = await withRows();
    await press('/backup');
    await press(KEYS.enter);
    expect(frame()).toContain('backup.completed');
    expect(frame()).not.toContain('site.created');
  });

  it('t sends a test event to the selected entry\'s endpoint in the background and reports it', async () => {
    const { frame, press, source } = await withRows();
    let release!: () => void;
    source.answer = (_kind, endpointId) =>
      new Promise((resolve) => {
        release = () => resolve(entry({ id: 70, endpoint_id: endpointId, event: 'webhook.test', status_code: 500, success: false, duration_ms: 12, created_at: new Date(NOW).toISOString() }));
      });
    await press('j', 't');
    expect(source.tests).toEqual([2]);
    expect(frame()).toContain('test event to endpoint #2…');
    // The view still answers keys while the request is out.
    await press('j');
    expect(frame()).toContain('› ');
    release();
    await vi.waitFor(() => expect(frame()).toContain('test event to endpoint #2: failed, HTTP 500 after 12ms, a retry follows (log entry #70)'));
    expect(frame()).toContain('webhook.test');
  });

  it('r redelivers the selected entry, and an API error lands in the status line', async () => {
    const { frame, press, source } = await withRows();
    source.answer = async () => {
      throw new Error('webhook endpoint 2 not found');
    };
    await press('j', 'r');
    expect(source.redeliveries).toEqual([[2, 41]]);
    await vi.waitFor(() => expect(frame()).toContain('redelivery of entry #41 to endpoint #2: webhook endpoint 2 not found'));
  });

  it('t with no entry yet tests the --endpoint one, and says so when there is none', async () => {
    const scoped = mount({ endpointId: 5 });
    await scoped.shown();
    await scoped.press('t');
    expect(scoped.source.tests).toEqual([5]);

    const plain = mount();
    await plain.shown();
    await plain.press('t', 'r');
    expect(plain.source.tests).toEqual([]);
    expect(plain.frame()).toContain('nothing to redeliver: select an attempt first');
  });

  it('q quits: the app unmounts and the source is stopped', async () => {
    const { press, source } = await withRows();
    expect(source.started).toBe(1);
    await press('q');
    await vi.waitFor(() => expect(source.stopped).toBe(1));
  });

  it('Ctrl+C quits, even while typing a filter', async () => {
    const { press, source } = await withRows();
    await press('/', 'a', KEYS.ctrlC);
    await vi.waitFor(() => expect(source.stopped).toBe(1));
  });
});

describe('watch view: the pure parts', () => {
  it('merges entries by id, newest first, bounded', () => {
    let state = initialState({ baseUrl: 'x' });
    state = reducer(state, { type: 'entries', entries: [entry({ id: 1 }), entry({ id: 2 })] });
    state = reducer(state, { type: 'entries', entries: [entry({ id: 2, status_code: 418 }), entry({ id: 3 })] });
    expect(state.entries.map((e) => e.id)).toEqual([3, 2, 1]);
    expect(state.entries[1].status_code).toBe(418);
    const many = Array.from({ length: 2500 }, (_, i) => entry({ id: 10_000 + i }));
    state = reducer(state, { type: 'entries', entries: many });
    expect(state.entries).toHaveLength(2000);
    expect(state.entries[0].id).toBe(12_499);
  });

  it('fits a row in 80 columns', () => {
    const state = reducer(
      reducer(initialState({ baseUrl: 'https://127.0.0.1:3443' }), { type: 'endpoints', endpoints: [{ id: 12, url: 'https://127.0.0.1:45123/', host: '127.0.0.1:45123' }] }),
      { type: 'entries', entries: [entry({ id: 1, endpoint_id: 12, event: 'subscription.suspended', status_code: 500, success: false, duration_ms: 9999 })] },
    );
    const app = render(<WatchView state={state} now={NOW} columns={80} rows={10} color={false} />);
    const row = (app.lastFrame() ?? '').split('\n').find((line) => line.includes('subscription.suspended')) ?? '';
    expect(row.length).toBeLessThanOrEqual(80);
    expect(row).toContain('#12 127.0.0.1:45123');
    expect(row).toContain('✗ retrying');
  });
});

describe('watch view: the queue in the header', () => {
  it('shows the daemon\'s pending deliveries and the oldest one\'s age once known, nothing before', async () => {
    const { source, lines, shown } = mount();
    await shown();
    expect(lines()[1]).not.toContain('queue');
    source.dispatch({ type: 'queue', queue: { pending: 12, oldestAgeSeconds: 185 } });
    await shown();
    expect(lines()[1]).toContain('· queue 12 (oldest 3m 5s)');
    source.dispatch({ type: 'queue', queue: { pending: 0, oldestAgeSeconds: null } });
    await shown();
    expect(lines()[1]).toContain('· queue 0');
  });
});
