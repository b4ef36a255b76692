// The watch view's part of issue 36: the endpoint's path shows at 120 columns, a finished test's
// message leaves the status line after a while, and the detail pane names the daemon that made
// an attempt (several daemons share a PostgreSQL store). Rendered with ink-testing-library.
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, render } from 'ink-testing-library';
import { WatchApp } from '../../src/cli/ui/app.js';
import { detailLines } from '../../src/cli/ui/format.js';
import { parseEntry } from '../../src/cli/ui/source.js';
import { initialState, reducer, STATUS_CLEAR_MS, WatchStore, type WatchEndpoint } from '../../src/cli/ui/state.js';
import { WatchView } from '../../src/cli/ui/view.js';
import { entry, NOW, ScriptedSource } from './fixtures.js';

afterEach(() => cleanup());

const HOOK: WatchEndpoint = { id: 1, url: 'https://hooks.example.com/panel/webhooks', host: 'hooks.example.com' };

describe('watch, the first hour', () => {
  it("shows the endpoint's path beside its host at 120 columns", () => {
    let state = initialState({ baseUrl: 'https://127.0.0.1:3443' });
    state = reducer(state, { type: 'endpoints', endpoints: [HOOK] });
    state = reducer(state, { type: 'entries', entries: [entry({ id: 1, endpoint_id: 1 })] });
    const { lastFrame } = render(<WatchView state={state} now={NOW} columns={120} rows={12} color={false} />);
    const row = (lastFrame() ?? '').split('\n').find((line) => line.includes('site.created')) ?? '';
    expect(row).toMatch(/#1 hooks\.example\.com\/panel\/webhooks\s+site\.created\s+1\/2\s+200/);
  });

  it('clears the message of a finished test from the status line once it is old', async () => {
    let now = NOW;
    const source = new ScriptedSource();
    const store = new WatchStore(initialState({ baseUrl: 'https://127.0.0.1:3443', endpointId: 1 }));
    const app = render(<WatchApp source={source} store={store} baseUrl="https://127.0.0.1:3443" color={false} size={{ columns: 120, rows: 12 }} clock={() => now} tickMs={10} />);
    await vi.waitFor(() => expect(source.started).toBe(1));
    source.dispatch({ type: 'endpoints', endpoints: [HOOK] });
    app.stdin.write('t');
    await vi.waitFor(() => expect(app.lastFrame()).toContain('test event to endpoint #1: HTTP 200'));
    // A frame drawn after the clock moved (each tick that changes the time renders one).
    const drawn = app.frames.length;
    now += STATUS_CLEAR_MS - 1000;
    await vi.waitFor(() => expect(app.frames.length).toBeGreaterThan(drawn));
    expect(app.lastFrame()).toContain('test event to endpoint #1: HTTP 200');
    now += 1000;
    await vi.waitFor(() => expect(app.lastFrame()).not.toContain('test event to endpoint #1'));
    // The attempt itself stays in the table.
    expect(app.lastFrame()).toContain('webhook.test');
  });

  it('keeps a message in progress however long it takes', () => {
    const state = reducer(initialState({ baseUrl: 'x' }), { type: 'status', tone: 'info', text: 'test event to endpoint #1…' });
    const { lastFrame } = render(<WatchView state={state} now={NOW + 10 * STATUS_CLEAR_MS} columns={120} rows={12} color={false} />);
    expect(lastFrame()).toContain('test event to endpoint #1…');
  });

  it('names the daemon that made an attempt in the detail pane', () => {
    const parsed = parseEntry({ ...entry({ id: 5 }), daemon: 'panel-b:4242' })!;
    expect(parsed.daemon).toBe('panel-b:4242');
    const lines = detailLines(parsed, HOOK, 100, false).map((line) => line.text);
    expect(lines).toContain('Result ✓ ok  ·  HTTP 200  ·  42ms  ·  by daemon panel-b:4242');
    // Entries of older daemons do not say.
    expect(detailLines(entry({ id: 6 }), HOOK, 100, false).some((line) => line.text.includes('by daemon'))).toBe(false);
  });
});
