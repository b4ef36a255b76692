// The change feed of a PostgreSQL store: one dedicated connection LISTENs on panelctl_changes,
// where every daemon's writes NOTIFY at commit, this one's included. The connection is made
// again when it drops (with backoff); on each reconnect listeners hear "look again" for
// everything (every collection, the outbox) and the log entries made meanwhile, since
// notifications sent while it was down are lost. New log entries are announced by id: a daemon
// fetches them only when someone there watches deliveries.
// A notice arrives a moment after its commit, so caches do not rely on notices alone: before
// serving, they ask `caughtUp()`, which asks the database (one statement on this connection,
// shared by every request that came while the last one was out) which cached collections changed
// since its last snapshot, and publishes those first.
import pg from 'pg';
import type { Change, ChangeFeed } from '../store.js';
import { pgTypes } from './db.js';
import { CHANNEL } from './repositories/context.js';

type Notice =
  | { kind: 'record'; collection: Extract<Change, { kind: 'record' }>['collection']; id: number | null }
  | { kind: 'outbox' }
  | { kind: 'logged'; ids: number[] };

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;
const CONNECT_TIMEOUT_MS = 10_000;
const KEEPALIVE_MS = 10_000;
/** Log entries made while disconnected that are announced after a reconnect, at most (streams resume by id beyond). */
const CATCH_UP_MOST = 5_000;
const COLLECTIONS: Array<Extract<Change, { kind: 'record' }>['collection']> = [
  'users',
  'api_keys',
  'subscriptions',
  'sites',
  'webhooks',
  'settings',
  'revoked_tokens',
];
/** The collections whose writing transactions the database notes in `read_changes` (see the baseline migration). */
const NOTED: Array<Extract<Change, { kind: 'record' }>['collection']> = ['users', 'api_keys', 'subscriptions', 'sites', 'revoked_tokens'];
/**
 * A snapshot older than this is not asked about (everything noted counts as changed instead): the
 * store's housekeeping drops `read_changes` rows after READ_CHANGES_KEPT_MS, well past it.
 */
const BASE_MOST_MS = 60_000;
/** How long `read_changes` rows are kept (see BASE_MOST_MS); the store's housekeeping prunes them. */
export const READ_CHANGES_KEPT_MS = 5 * 60_000;
/**
 * The snapshot now, and the noted collections changed by transactions committed in it that
 * `$1` (an earlier snapshot) did not see. By xid, not by order of commit: a transaction that took
 * its xid early and committed late is still found. Only xids from the older snapshot's xmin on
 * can be unseen by it: the range read from the primary key is the transactions since.
 */
const CHANGED_SINCE_SQL = `SELECT pg_current_snapshot()::text AS snapshot,
  ARRAY(SELECT DISTINCT collection FROM read_changes
        WHERE xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(xid, $1::pg_snapshot)) AS changed`;
const SNAPSHOT_SQL = 'SELECT pg_current_snapshot()::text AS snapshot';

export class PgChangeFeed implements ChangeFeed {
  readonly #listeners = new Set<(change: Change) => void>();
  #client: pg.Client | null = null;
  #connected = false;
  #closed = false;
  #retryMs = RETRY_MIN_MS;
  #retryTimer: NodeJS.Timeout | null = null;
  /** The newest log entry announced or present when last connected (null: never connected). */
  #lastLogged: number | null = null;
  /** The snapshot of the last answered question of caughtUp, and when it was asked (epoch ms). */
  #base: { snapshot: string; at: number } | null = null;
  /** The question of caughtUp out now, and the one the calls made meanwhile wait for. */
  #asking: Promise<boolean> | null = null;
  #next: Promise<boolean> | null = null;

  constructor(
    private readonly connectionString: string,
    /** Told when the connection comes or goes (caches are valid only while it is up). */
    private readonly onConnection: (connected: boolean) => void = () => undefined,
  ) {}

  get connected(): boolean {
    return this.#connected;
  }

  subscribe(listener: (change: Change) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  caughtUp(): Promise<boolean> {
    if (!this.#asking) return this.#startAsking();
    // The question out was asked before this call: a commit just before the call may be missing
    // from its snapshot, so the call waits for the next one (which takes every call made meanwhile).
    this.#next ??= this.#asking.then(() => {
      this.#next = null;
      return this.#asking ?? this.#startAsking();
    });
    return this.#next;
  }

  #startAsking(): Promise<boolean> {
    const asking = this.#ask().finally(() => {
      if (this.#asking === asking) this.#asking = null;
    });
    this.#asking = asking;
    return asking;
  }

  async #ask(): Promise<boolean> {
    const client = this.#client;
    if (!client || !this.#connected) return false;
    const at = Date.now();
    const base = this.#base && at - this.#base.at < BASE_MOST_MS ? this.#base : null;
    let row: { snapshot: string; changed?: Array<Extract<Change, { kind: 'record' }>['collection']> };
    try {
      const { rows } = base
        ? await client.query({ name: 'panelctl_changed_since', text: CHANGED_SINCE_SQL, values: [base.snapshot] })
        : await client.query(SNAPSHOT_SQL);
      row = rows[0];
    } catch {
      // The connection failed under the question: `lost` reconnects; until then nothing is vouched for.
      return false;
    }
    // Each question's snapshot becomes the next one's base only after what it found is published,
    // so whatever a base saw has been told to the listeners.
    for (const collection of base ? (row.changed ?? []) : NOTED) this.#emit({ kind: 'record', collection, id: null });
    if (!this.#base || this.#base.at <= at) this.#base = { snapshot: row.snapshot, at };
    return true;
  }

  /** Connects and LISTENs; rejects when the first connection fails. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    const client = this.#client;
    this.#client = null;
    this.#setConnected(false);
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    // Keepalives: this connection only ever waits, so a peer gone without a word (a host lost,
    // a pooler's idle cut) is noticed by the socket, not by a statement.
    const client = new pg.Client({
      connectionString: this.connectionString,
      types: pgTypes,
      application_name: 'panelctl-listen',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_MS,
    });
    const lost = () => {
      if (this.#client !== client) return;
      this.#client = null;
      this.#setConnected(false);
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      this.#scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      this.#handle(message.payload);
    });
    let missed: number[] = [];
    // Taken before listening: a notice arriving meanwhile must not move it past entries missed.
    const mark = this.#lastLogged;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      // Listening from here on: entries past the mark were made while nobody here listened.
      const { rows } = await client.query<{ id: number }>('SELECT id FROM delivery_log WHERE id > $1 ORDER BY id DESC LIMIT $2', [
        mark ?? 0,
        mark === null ? 1 : CATCH_UP_MOST,
      ]);
      if (mark !== null) missed = rows.map((r) => r.id).reverse();
      this.#noteLogged(rows.length > 0 ? [rows[0].id] : [0]);
    } catch (error) {
      client.removeAllListeners();
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#retryMs = RETRY_MIN_MS;
    this.#setConnected(true);
    if (missed.length > 0) this.#emit({ kind: 'logged', ids: missed });
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.#connect().then(
        () => {
          // Whatever was announced while we were away is lost: every cache is dropped and every
          // dispatcher looks again.
          for (const collection of COLLECTIONS) this.#emit({ kind: 'record', collection, id: null });
          this.#emit({ kind: 'outbox' });
        },
        () => this.#scheduleReconnect(),
      );
    }, delay);
    this.#retryTimer.unref();
  }

  #setConnected(connected: boolean): void {
    if (this.#connected === connected) return;
    this.#connected = connected;
    this.onConnection(connected);
  }

  #handle(payload: string): void {
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if (notice.kind === 'logged') {
      this.#noteLogged(notice.ids);
      this.#emit({ kind: 'logged', ids: notice.ids });
    } else if (notice.kind === 'outbox') this.#emit({ kind: 'outbox' });
    else if (notice.kind === 'record') this.#emit({ kind: 'record', collection: notice.collection, id: notice.id });
  }

  #noteLogged(ids: number[]): void {
    for (const id of ids) if (this.#lastLogged === null || id > this.#lastLogged) this.#lastLogged = id;
  }

  #emit(change: Change): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own; the others still hear the change.
      }
    }
  }
}
