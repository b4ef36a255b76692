// The live `panelctl watch` app: holds the store, starts the data source, maps keys to
// actions (keys.ts) and runs test/redeliver in the background, reporting in the status line.
import React, { useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { useApp, useInput, useStdout } from 'ink';
import { formatDuration, formatStatusCode } from './format.js';
import { intentFor, splitKeys, type Intent, type KeyInfo } from './keys.js';
import type { WatchSource } from './source.js';
import { detailEntry, initialState, selectedEntry, WatchStore, type WatchEntry, type WatchState } from './state.js';
import { detailHeight, detailMaxScroll, tableHeight, WatchView } from './view.js';

export interface WatchAppProps {
  source: WatchSource;
  baseUrl: string;
  endpointId?: number | null;
  failedOnly?: boolean;
  color?: boolean;
  /** A fixed screen size (tests); else the terminal's, following resizes. */
  size?: { columns: number; rows: number };
  clock?: () => number;
  /** How often the counts' time window moves. */
  tickMs?: number;
  /** The store, when the caller wants to watch it (tests). */
  store?: WatchStore;
}

/** The terminal's size, minus one row: a frame as tall as the screen makes ink clear it on every render. */
function useTerminalSize(fixed?: { columns: number; rows: number }) {
  const { stdout } = useStdout();
  const read = () => ({ columns: stdout.columns || 80, rows: Math.max(6, (stdout.rows || 24) - 1) });
  const [size, setSize] = useState(read);
  useEffect(() => {
    if (fixed) return;
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, fixed]);
  return fixed ?? size;
}

function useNow(clock: () => number, tickMs: number): number {
  const [now, setNow] = useState(clock);
  useEffect(() => {
    const timer = setInterval(() => setNow(clock()), tickMs);
    return () => clearInterval(timer);
  }, [clock, tickMs]);
  return now;
}

/** The status line after an attempt made by a key (test, redeliver). */
export function describeAttempt(what: string, entry: WatchEntry): { text: string; tone: 'ok' | 'error' } {
  const answer = entry.status_code === 0 ? 'no answer' : `HTTP ${formatStatusCode(entry.status_code)}`;
  if (entry.success) return { tone: 'ok', text: `${what}: ${answer} in ${formatDuration(entry.duration_ms)} (log entry #${entry.id})` };
  const retry = entry.attempt === 1 ? ', a retry follows' : '';
  return { tone: 'error', text: `${what}: failed, ${answer} after ${formatDuration(entry.duration_ms)}${retry} (log entry #${entry.id})` };
}

export function WatchApp(props: WatchAppProps) {
  const { exit } = useApp();
  const store = useMemo(
    () => props.store ?? new WatchStore(initialState({ baseUrl: props.baseUrl, endpointId: props.endpointId, failedOnly: props.failedOnly })),
    [],
  );
  const state = useSyncExternalStore(store.subscribe, store.getState);
  const { columns, rows } = useTerminalSize(props.size);
  const clock = props.clock ?? Date.now;
  const now = useNow(clock, props.tickMs ?? 1000);
  const color = props.color ?? true;

  useEffect(() => props.source.start(store.dispatch), [props.source, store]);

  // Test and redeliver run in the background; their outcome lands in the status line and the
  // entry they answer joins the table (the stream brings it too; entries merge by id).
  const perform = (what: string, attempt: () => Promise<WatchEntry>) => {
    store.dispatch({ type: 'status', tone: 'info', text: `${what}…` });
    attempt().then(
      (entry) => {
        store.dispatch({ type: 'entries', entries: [entry] });
        store.dispatch({ type: 'status', ...describeAttempt(what, entry), at: clock() });
      },
      (error: Error) => store.dispatch({ type: 'status', tone: 'error', text: `${what}: ${error.message}`, at: clock() }),
    );
  };

  const run = (intent: Intent, current: WatchState) => {
    const target = current.detail ? detailEntry(current) : selectedEntry(current);
    switch (intent.kind) {
      case 'quit':
        exit();
        return;
      case 'test': {
        const endpointId = target?.endpoint_id ?? current.endpointScope;
        if (!endpointId) {
          store.dispatch({ type: 'status', tone: 'error', text: 'no endpoint to test: select an attempt first' });
          return;
        }
        perform(`test event to endpoint #${endpointId}`, () => props.source.test(endpointId));
        return;
      }
      case 'redeliver':
        if (!target) {
          store.dispatch({ type: 'status', tone: 'error', text: 'nothing to redeliver: select an attempt first' });
          return;
        }
        perform(`redelivery of entry #${target.id} to endpoint #${target.endpoint_id}`, () =>
          props.source.redeliver(target.endpoint_id, target.id),
        );
        return;
      case 'action': {
        const action = intent.action;
        if (action.type === 'scrollDetail') {
          store.dispatch({ ...action, max: detailMaxScroll(current, columns, rows) });
        } else store.dispatch(action);
      }
    }
  };

  useInput((input, key: KeyInfo) => {
    const page = Math.max(1, (store.getState().detail ? detailHeight(rows) : tableHeight(rows)) - 1);
    for (const one of splitKeys(input, key)) {
      const current = store.getState();
      const intent = intentFor(current, one.input, one.key, page);
      if (intent) run(intent, current);
    }
  });

  return <WatchView state={state} now={now} columns={columns} rows={rows} color={color} />;
}
