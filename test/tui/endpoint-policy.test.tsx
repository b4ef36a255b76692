// The watch view shows an endpoint's delivery policy (retry schedule, caps, pause) in the detail
// pane of its attempts, from the endpoint as GET /webhooks answers it (issue 33).
import React from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render } from 'ink-testing-library';
import { detailLines } from '../../src/cli/ui/format.js';
import { parseEndpoint } from '../../src/cli/ui/source.js';
import { initialState, reducer } from '../../src/cli/ui/state.js';
import { WatchView } from '../../src/cli/ui/view.js';
import { entry, NOW } from './fixtures.js';

afterEach(() => cleanup());

const answer = { id: 1, url: 'https://hooks.example.com/in', active: true, retry_schedule: [2], max_in_flight: 8, rate_limit_per_second: null, paused: false };
const policyLine = (raw: object) => detailLines(entry({ id: 1, endpoint_id: 1 }), parseEndpoint(raw)!, 120, false).find((line) => line.text.startsWith('Endpoint policy'))?.text;

describe('watch: the endpoint policy in the detail pane', () => {
  it('shows the defaults, a custom schedule with caps, and a pause with what it keeps', () => {
    expect(policyLine(answer)).toBe('Endpoint policy retries after 2 s  ·  at most 8 at once  ·  no rate limit');
    expect(policyLine({ ...answer, retry_schedule: [1, 1, 2], max_in_flight: 1, rate_limit_per_second: 5, paused: true, paused_deliveries: 3 })).toBe(
      'Endpoint policy retries after 1, 1, 2 s  ·  at most 1 at once  ·  at most 5 a second  ·  paused, 3 kept',
    );
    expect(policyLine({ ...answer, retry_schedule: [] })).toBe('Endpoint policy no retries  ·  at most 8 at once  ·  no rate limit');
  });

  it('shows no policy line for an endpoint from a daemon that does not report one', () => {
    expect(policyLine({ id: 1, url: 'https://hooks.example.com/in' })).toBeUndefined();
  });

  it('renders it in the open detail pane', () => {
    let state = initialState({ baseUrl: 'https://127.0.0.1:3443' });
    state = reducer(state, { type: 'endpoints', endpoints: [parseEndpoint({ ...answer, rate_limit_per_second: 5 })!] });
    state = reducer(state, { type: 'entries', entries: [entry({ id: 1, endpoint_id: 1 })] });
    state = reducer(state, { type: 'openDetail' });
    const { lastFrame } = render(<WatchView state={state} now={NOW} columns={120} rows={60} color={false} />);
    expect(lastFrame()).toContain('Endpoint policy retries after 2 s  ·  at most 8 at once  ·  at most 5 a second');
  });
});
