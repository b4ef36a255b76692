// The state of `panelctl watch` and the one reducer that changes it. No React, no network:
// the data source and the key bindings produce actions, the components render the state.
import type { DeliveryEntry, EndpointHealth } from '../../shared/api/webhooks.js';
import type { StreamState } from '../stream/deliveries.js';

/** A delivery log entry as the watch view keeps it (validated at the edge by parseEntry);
 * `request_headers` is optional so entries from an older daemon still show. */
export type WatchEntry = Omit<DeliveryEntry, 'request_headers'> & { request_headers?: Record<string, string> };

export interface WatchEndpoint {
  id: number;
  url: string;
  /** host[:port] of url, what the table shows. */
  host: string;
  /** Absent when the daemon does not report them. */
  active?: boolean;
  health?: EndpointHealth;
  /** Deliveries kept while paused; absent when not paused (or the daemon does not report it). */
  paused?: number;
  /** The endpoint's delivery policy, as the daemon reports it (absent from an older daemon). */
  policy?: EndpointPolicyView;
}

export interface EndpointPolicyView {
  /** Seconds before each retry. */
  retrySchedule: number[];
  maxInFlight: number;
  /** Attempts a second at most; null for none. */
  rateLimit: number | null;
}

export type StatusTone = 'info' | 'ok' | 'error';

export interface WatchState {
  baseUrl: string;
  /** `--endpoint`: the only endpoint followed, and the target of `t` when nothing is selected. */
  endpointScope: number | null;
  /** Newest first (created_at, then id), unique ids, at most MAX_ENTRIES. */
  entries: WatchEntry[];
  endpoints: Record<number, WatchEndpoint>;
  connection: { state: StreamState; detail?: string };
  failedOnly: boolean;
  /** Applied event filter: a case-insensitive substring of the event name; '' for none. */
  eventFilter: string;
  /** The text being typed after `/`; null when not typing. */
  filterDraft: string | null;
  /** The selected entry; null follows the newest visible row. */
  selectedId: number | null;
  /** The entry shown in the detail pane and how far it is scrolled. */
  detail: { entryId: number; scroll: number } | null;
  /** `at` (epoch ms) is when a finished action's message was set: it is cleared after a while. */
  status: { text: string; tone: StatusTone; at?: number } | null;
  /** The daemon's queue (GET /health's admin detail); null while unknown (not an admin, or not read yet). */
  queue: WatchQueue | null;
}

export interface WatchQueue {
  pending: number;
  /** Seconds since the oldest pending delivery was published; null when none is pending. */
  oldestAgeSeconds: number | null;
}

export type WatchAction =
  | { type: 'entries'; entries: WatchEntry[] }
  | { type: 'endpoints'; endpoints: WatchEndpoint[] }
  | { type: 'connection'; state: StreamState; detail?: string }
  | { type: 'move'; delta: number }
  | { type: 'moveTo'; where: 'top' | 'bottom' }
  | { type: 'openDetail' }
  | { type: 'closeDetail' }
  /** `max` (the pane's last scroll position) is known to the view, which fills it in. */
  | { type: 'scrollDetail'; delta: number; max?: number }
  | { type: 'toggleFailed' }
  | { type: 'filterStart' }
  | { type: 'filterType'; text: string }
  | { type: 'filterBackspace' }
  | { type: 'filterApply' }
  | { type: 'filterClear' }
  | { type: 'status'; text: string; tone: StatusTone; at?: number }
  | { type: 'queue'; queue: WatchQueue };

/** Older entries are dropped beyond this, so a long-running watch keeps a bounded memory. */
export const MAX_ENTRIES = 2000;
/** How long the outcome of a test or redelivery stays on the status line. */
export const STATUS_CLEAR_MS = 8_000;
/** The window of the header's counts. */
export const COUNT_WINDOW_MS = 5 * 60_000;

export function initialState(options: { baseUrl: string; endpointId?: number | null; failedOnly?: boolean }): WatchState {
  return {
    baseUrl: options.baseUrl,
    endpointScope: options.endpointId ?? null,
    entries: [],
    endpoints: {},
    connection: { state: 'connecting' },
    failedOnly: Boolean(options.failedOnly),
    eventFilter: '',
    filterDraft: null,
    selectedId: null,
    detail: null,
    status: null,
    queue: null,
  };
}

function newerFirst(a: WatchEntry, b: WatchEntry): number {
  return Date.parse(b.created_at) - Date.parse(a.created_at) || b.id - a.id;
}

/** Adds or replaces entries by id; the result stays sorted newest first and bounded. */
export function mergeEntries(current: WatchEntry[], incoming: WatchEntry[]): WatchEntry[] {
  if (!incoming.length) return current;
  const byId = new Map(current.map((e) => [e.id, e]));
  for (const entry of incoming) byId.set(entry.id, entry);
  return [...byId.values()].sort(newerFirst).slice(0, MAX_ENTRIES);
}

/** The rows the table shows, after the failed-only and event filters. */
export function visibleEntries(state: WatchState): WatchEntry[] {
  const needle = state.eventFilter.toLowerCase();
  return state.entries.filter(
    (e) => (!state.failedOnly || !e.success) && (!needle || e.event.toLowerCase().includes(needle)),
  );
}

/** Index of the selected row among the visible ones (0 when following the newest). */
export function selectedIndex(state: WatchState, visible = visibleEntries(state)): number {
  if (state.selectedId === null) return 0;
  const index = visible.findIndex((e) => e.id === state.selectedId);
  return index < 0 ? 0 : index;
}

export function selectedEntry(state: WatchState, visible = visibleEntries(state)): WatchEntry | undefined {
  return visible[selectedIndex(state, visible)];
}

export function detailEntry(state: WatchState): WatchEntry | undefined {
  return state.detail ? state.entries.find((e) => e.id === state.detail!.entryId) : undefined;
}

/** Endpoints that are failing (deliveries in a row) or inactive, for the header's warning. */
export function troubledEndpoints(state: WatchState): WatchEndpoint[] {
  return Object.values(state.endpoints).filter((e) => e.active === false || (e.health?.consecutive_failures ?? 0) > 0);
}

/** The deliveries whose retry (attempt 2) has been seen. */
export function retriedDeliveries(entries: WatchEntry[]): Map<string, number> {
  const latest = new Map<string, number>();
  for (const e of entries) if (e.attempt > (latest.get(e.delivery_id) ?? 1)) latest.set(e.delivery_id, e.attempt);
  return latest;
}

/**
 * A failed attempt whose retry has not been seen yet: one that names its next attempt, or
 * (entries of older daemons, which name none) a failed first attempt.
 */
export function isRetryPending(entry: WatchEntry, retried: Map<string, number>): boolean {
  if (entry.success || (retried.get(entry.delivery_id) ?? 1) > entry.attempt) return false;
  return entry.next_attempt_at === undefined ? entry.attempt === 1 : entry.next_attempt_at !== null;
}

export interface Counts {
  /** Attempts made in the window. */
  sent: number;
  ok: number;
  failed: number;
  /** Failed first attempts in the window whose retry has not been seen yet. */
  pendingRetries: number;
}

export function countRecent(entries: WatchEntry[], now: number, windowMs = COUNT_WINDOW_MS): Counts {
  const counts: Counts = { sent: 0, ok: 0, failed: 0, pendingRetries: 0 };
  const retried = retriedDeliveries(entries);
  for (const entry of entries) {
    if (now - Date.parse(entry.created_at) > windowMs) continue;
    counts.sent++;
    if (entry.success) counts.ok++;
    else {
      counts.failed++;
      if (isRetryPending(entry, retried)) counts.pendingRetries++;
    }
  }
  return counts;
}

function move(state: WatchState, target: number): WatchState {
  const visible = visibleEntries(state);
  if (!visible.length) return state;
  const index = Math.max(0, Math.min(visible.length - 1, target));
  // Row 0 means "follow the newest": new entries then keep the cursor on top.
  return { ...state, selectedId: index === 0 ? null : visible[index].id };
}

export function reducer(state: WatchState, action: WatchAction): WatchState {
  switch (action.type) {
    case 'entries': {
      const entries = mergeEntries(state.entries, action.entries);
      return entries === state.entries ? state : { ...state, entries };
    }
    case 'endpoints': {
      const endpoints = { ...state.endpoints };
      for (const endpoint of action.endpoints) endpoints[endpoint.id] = endpoint;
      return { ...state, endpoints };
    }
    case 'connection':
      return { ...state, connection: { state: action.state, detail: action.detail } };
    case 'queue':
      return { ...state, queue: action.queue };
    case 'move':
      return move(state, selectedIndex(state) + action.delta);
    case 'moveTo':
      return move(state, action.where === 'top' ? 0 : Number.MAX_SAFE_INTEGER);
    case 'openDetail': {
      const entry = selectedEntry(state);
      return entry ? { ...state, detail: { entryId: entry.id, scroll: 0 } } : state;
    }
    case 'closeDetail':
      return { ...state, detail: null };
    case 'scrollDetail': {
      if (!state.detail) return state;
      const scroll = Math.max(0, Math.min(action.max ?? Number.MAX_SAFE_INTEGER, state.detail.scroll + action.delta));
      return { ...state, detail: { ...state.detail, scroll } };
    }
    case 'toggleFailed':
      return { ...state, failedOnly: !state.failedOnly };
    case 'filterStart':
      return { ...state, filterDraft: state.eventFilter };
    case 'filterType':
      return state.filterDraft === null ? state : { ...state, filterDraft: state.filterDraft + action.text };
    case 'filterBackspace':
      return state.filterDraft === null ? state : { ...state, filterDraft: [...state.filterDraft].slice(0, -1).join('') };
    case 'filterApply':
      return { ...state, eventFilter: (state.filterDraft ?? state.eventFilter).trim(), filterDraft: null };
    case 'filterClear':
      return { ...state, eventFilter: '', filterDraft: null };
    case 'status':
      return { ...state, status: { text: action.text, tone: action.tone, ...(action.at !== undefined ? { at: action.at } : {}) } };
  }
}

/**
 * The state holder: dispatch applies the reducer at once, so a burst of keys (or a paste)
 * is handled against the state each previous key left, not a stale render's copy.
 *
 * @example
 * const store = new WatchStore(initialState({ baseUrl }));
 * store.dispatch({ type: 'toggleFailed' });
 * store.getState().failedOnly; // true
 */
export class WatchStore {
  #state: WatchState;
  readonly #listeners = new Set<() => void>();

  constructor(initial: WatchState) {
    this.#state = initial;
  }

  getState = (): WatchState => this.#state;

  dispatch = (action: WatchAction): void => {
    const next = reducer(this.#state, action);
    if (next === this.#state) return;
    this.#state = next;
    for (const listener of this.#listeners) listener();
  };

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };
}
