// The JSON store's data in memory, and the one way it changes: operations. An operation puts or
// deletes a whole record (or sets the settings or a counter), so applying it twice is harmless
// and a journal of them replays to the same state. Every change goes through a Writer, which
// records the operation for the journal and its inverse for a rollback.
import { DEFAULT_SETTINGS, type Settings } from '../../shared/settings.js';
import type {
  ApiKeyRecord,
  DeliveryRecord,
  LimiterRecord,
  ResetTokenRecord,
  SiteRecord,
  SubscriptionRecord,
  UserRecord,
  WebhookRecord,
} from '../types.js';
import type { Change } from '../store.js';
import { EndpointIndex } from './endpoint-index.js';
import { OutboxLanes } from './outbox-lanes.js';
import { DeliveryTable, type PendingSnapshotGroup } from './outbox-table.js';
import { Table } from './tables.js';

export interface RevokedToken {
  jti: string;
  expires_at: number;
}

/** The store's tables, as the snapshot and the journal name them. */
export const TABLE_NAMES = ['users', 'api_keys', 'subscriptions', 'sites', 'webhooks', 'reset_tokens', 'revoked_tokens', 'limiter', 'deliveries'] as const;

export type TableName = (typeof TABLE_NAMES)[number];

export type Op =
  | { t: TableName; k: number | string; v?: object }
  /** Deliveries of one event: the body once, not once per endpoint. */
  | { t: 'enqueue'; body: string; d: Omit<DeliveryRecord, 'body'>[] }
  | { t: 'settings'; v: Partial<Settings> }
  | { t: 'counter'; k: string; v: number };

/** The snapshot file's document (store.json). */
export interface Snapshot {
  schema_version: number;
  /** The first journal generation not contained in this snapshot. */
  journal_gen: number;
  counters: Record<string, number>;
  users: UserRecord[];
  api_keys: ApiKeyRecord[];
  subscriptions: SubscriptionRecord[];
  sites: SiteRecord[];
  webhooks: WebhookRecord[];
  reset_tokens: ResetTokenRecord[];
  revoked_tokens: RevokedToken[];
  limiter: LimiterRecord[];
  settings: Partial<Settings>;
  /** Pending deliveries (older snapshots); new ones are written grouped, as `pending`. */
  deliveries?: DeliveryRecord[];
  /** Pending deliveries grouped by body, each a whole record (snapshots of schema 2). */
  outbox?: Array<{ body: string; d: Omit<DeliveryRecord, 'body'>[] }>;
  /** Pending deliveries per event: its shared fields once, the deliveries by column (schema 3). */
  pending?: PendingSnapshotGroup[];
}

export const lower = (s: string) => s.toLowerCase();

export class State {
  readonly users = new Table<UserRecord>((u) => u.id).unique('email', (u) => lower(u.email)).group('role', (u) => u.role);
  readonly api_keys = new Table<ApiKeyRecord>((k) => k.id).unique('hash', (k) => k.key_hash).group('user', (k) => k.user_id);
  readonly subscriptions = new Table<SubscriptionRecord>((s) => s.id)
    .unique('main_domain', (s) => s.main_domain)
    .group('customer', (s) => s.customer_id);
  readonly sites = new Table<SiteRecord>((s) => s.id).unique('domain', (s) => s.domain).group('subscription', (s) => s.subscription_id);
  readonly webhooks = new Table<WebhookRecord>((w) => w.id).group('user', (w) => w.user_id);
  readonly reset_tokens = new Table<ResetTokenRecord>((t) => t.id).unique('hash', (t) => t.token_hash).group('user', (t) => t.user_id);
  readonly revoked_tokens = new Table<RevokedToken, string>((t) => t.jti);
  readonly limiter = new Table<LimiterRecord, string>((r) => r.key);
  // Indexed per endpoint by the lanes (see OutboxLanes.ofEndpoint), not by the table.
  readonly deliveries = new DeliveryTable();
  readonly lanes = new OutboxLanes();
  /** Active endpoints by owner and event name, for matching published events. */
  readonly endpoints = new EndpointIndex();
  settings: Partial<Settings> = {};
  counters: Record<string, number> = {};
  #settingsView: Readonly<Settings> | null = null;

  constructor() {
    this.deliveries.onChange = this.lanes.onChange;
    this.webhooks.onChange = this.endpoints.onChange;
  }

  /** A table by name; the deliveries' has the same surface (see DeliveryTable). */
  table(name: TableName): Table<object, number | string> {
    return this[name] as unknown as Table<object, number | string>;
  }

  get settingsView(): Readonly<Settings> {
    return (this.#settingsView ??= Object.freeze({ ...DEFAULT_SETTINGS, ...this.settings }));
  }

  setSettings(settings: Partial<Settings>): void {
    this.settings = settings;
    this.#settingsView = null;
  }

  /** Applies a journal operation (replay). */
  apply(op: Op): void {
    if (op.t === 'settings') this.setSettings(op.v);
    else if (op.t === 'counter') this.counters[op.k] = Math.max(this.counters[op.k] ?? 0, op.v);
    else if (op.t === 'enqueue') this.deliveries.add(op.body, op.d);
    else if (op.v) this.table(op.t).put({ ...op.v });
    else this.table(op.t).delete(op.k);
  }

  load(snapshot: Snapshot): void {
    for (const name of TABLE_NAMES) {
      for (const record of snapshot[name] ?? []) this.table(name).put(record);
    }
    for (const group of snapshot.outbox ?? []) this.deliveries.add(group.body, group.d);
    this.deliveries.load(snapshot.pending ?? []);
    this.setSettings(snapshot.settings ?? {});
    this.counters = { ...(snapshot.counters ?? {}) };
  }

  snapshot(schemaVersion: number, journalGen: number): string {
    const doc: Snapshot = {
      schema_version: schemaVersion,
      journal_gen: journalGen,
      counters: this.counters,
      users: this.users.values(),
      api_keys: this.api_keys.values(),
      subscriptions: this.subscriptions.values(),
      sites: this.sites.values(),
      webhooks: this.webhooks.values(),
      reset_tokens: this.reset_tokens.values(),
      revoked_tokens: this.revoked_tokens.values(),
      limiter: this.limiter.values(),
      settings: this.settings,
      pending: this.deliveries.snapshot(),
    };
    return JSON.stringify(doc);
  }
}

/**
 * The changes of one transaction: applied to memory at once (so the transaction reads its own
 * writes and the store's unique checks see them), recorded as journal operations, and undone in
 * reverse order on rollback.
 */
export class Writer {
  readonly ops: Op[] = [];
  readonly changes: Change[] = [];
  readonly afterCommit: Array<() => Promise<void> | void> = [];
  /** Deliveries this transaction queued: withheld from claims until it is durable (see OutboxLanes.withhold). */
  readonly enqueued: string[] = [];
  readonly #undo: Array<() => void> = [];
  /** Set by a rollback after a failed journal write: the ids handed out stay used. */
  #keepIds = false;
  /** Whether the journal line must be fsynced before the transaction resolves. */
  durable = false;

  constructor(readonly state: State) {}

  put<T extends object>(name: TableName, record: T, durable = true): T {
    const table = this.state.table(name);
    const previous = table.put(record);
    const key = table.keyOf(record);
    this.#undo.push(() => (previous ? table.put(previous) : table.delete(key)));
    this.ops.push({ t: name, k: key, v: record });
    this.durable ||= durable;
    return record;
  }

  delete<T extends object>(name: TableName, key: number | string, durable = true): T | undefined {
    const table = this.state.table(name);
    const previous = table.delete(key);
    if (!previous) return undefined;
    this.#undo.push(() => table.put(previous));
    this.ops.push({ t: name, k: key });
    this.durable ||= durable;
    return previous as T;
  }

  /**
   * A delivery's removal on its final outcome: the same journal operation as `delete`, without
   * making records of the entry for the answer and the undo.
   */
  deleteDelivery(id: string, durable = true): boolean {
    const table = this.state.deliveries;
    const previous = table.take(id);
    if (!previous) return false;
    this.#undo.push(() => table.restore(previous));
    this.ops.push({ t: 'deliveries', k: id });
    this.durable ||= durable;
    return true;
  }

  enqueue(deliveries: DeliveryRecord[]): void {
    const table = this.state.deliveries;
    const byBody = new Map<string, Omit<DeliveryRecord, 'body'>[]>();
    const ids: string[] = [];
    for (const delivery of deliveries) {
      if (table.has(delivery.id)) throw new Error(`delivery ${delivery.id} exists already`);
      const { body, ...rest } = delivery;
      let group = byBody.get(body);
      if (!group) byBody.set(body, (group = []));
      group.push(rest);
      ids.push(delivery.id);
      this.enqueued.push(delivery.id);
    }
    this.state.lanes.withhold(ids);
    for (const [body, d] of byBody) {
      table.add(body, d);
      this.#undo.push(() => {
        for (const delivery of d) table.delete(delivery.id);
      });
      this.ops.push({ t: 'enqueue', body, d });
    }
    this.durable = true;
  }

  setSettings(settings: Partial<Settings>): void {
    const previous = this.state.settings;
    this.state.setSettings(settings);
    this.#undo.push(() => this.state.setSettings(previous));
    this.ops.push({ t: 'settings', v: settings });
    this.durable = true;
  }

  /** The next id of a counter (ids are never reused, even after a delete). */
  nextId(counter: string, durable = true): number {
    const counters = this.state.counters;
    const previous = counters[counter] ?? 0;
    counters[counter] = previous + 1;
    this.#undo.push(() => {
      if (!this.#keepIds) counters[counter] = previous;
    });
    this.ops.push({ t: 'counter', k: counter, v: previous + 1 });
    this.durable ||= durable;
    return previous + 1;
  }

  change(change: Change): void {
    this.changes.push(change);
  }

  /**
   * Undoes the changes, newest first. `keepIds`: counters keep the ids this transaction took, so
   * a write that failed on the disk (and was visible in memory meanwhile) never lends its id to
   * another record.
   */
  rollback(options: { keepIds?: boolean } = {}): void {
    this.#keepIds = options.keepIds ?? false;
    for (let i = this.#undo.length - 1; i >= 0; i--) this.#undo[i]();
    this.#undo.length = 0;
  }
}
