// The change feed of a PostgreSQL store: one dedicated connection LISTENs on panelctl_changes,
// where every daemon's writes NOTIFY at commit, this one's included. The connection is made
// again when it drops (with backoff); on each reconnect listeners hear "look again" for
// everything (every collection, the outbox) and the log entries made meanwhile, since
// notifications sent while it was down are lost. New log entries are announced by id: a daemon
// fetches them only when someone there watches deliveries.
import pg from 'pg';
import type { Change, ChangeFeed } from '../store.js';
import { pgTypes } from './db.js';
import { CHANNEL } from './repositories.js';

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
const COLLECTIONS: Array<Extract<Change, { kind: 'record' }>['collection']> = ['users', 'api_keys', 'subscriptions', 'sites', 'webhooks', 'settings'];

export class PgChangeFeed implements ChangeFeed {
  readonly synchronous = false;
  readonly #listeners = new Set<(change: Change) => void>();
  #client: pg.Client | null = null;
  #connected = false;
  #closed = false;
  #retryMs = RETRY_MIN_MS;
  #retryTimer: NodeJS.Timeout | null = null;
  /** The newest log entry announced or present when last connected (null: never connected). */
  #lastLogged: number | null = null;

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
