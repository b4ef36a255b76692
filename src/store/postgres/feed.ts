// The change feed of a PostgreSQL store: one dedicated connection LISTENs on panelctl_changes,
// where every daemon's writes NOTIFY after commit, this one's included. The connection is made
// again when it drops (with backoff); on each reconnect listeners hear "look again" for
// everything (every collection, the outbox) and the log entries made meanwhile, since
// notifications sent while it was down are lost. New log entries are announced by id: a daemon
// fetches them only when someone there watches deliveries.
// A notice arrives a moment after its commit, so caches do not rely on notices alone. A feed that
// serves caches (the first `caughtUp()` makes it a member) holds the write fence: it keeps a lease
// in `feed_members` and, while the lease holds locally, answers `caughtUp()` at once; every store
// writing a cached collection waits, after commit, until each live member has acknowledged the
// write's notice or its lease has run out (docs/decisions/write-fence.md).
// Without a valid lease `caughtUp()` asks the database (one statement on this connection, shared
// by every request that came while the last one was out) which cached collections changed since
// its last snapshot, and publishes those first.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Change, ChangeFeed } from '../store.js';
import { pgTypes } from './db.js';
import { CHANNEL } from './repositories/context.js';

type Notice =
  | { kind: 'record'; collection: Extract<Change, { kind: 'record' }>['collection']; id: number | null }
  | { kind: 'outbox' }
  | { kind: 'logged'; ids: number[] }
  /** A write of cached collections (see Notifier.fence): `t` its token, `c` what changed. */
  | { kind: 'fence'; t: string; c: Array<[Extract<Change, { kind: 'record' }>['collection'], number | null]> }
  /** A member joined or renewed its lease (`m`, its renewal `s`). */
  | { kind: 'lease'; m: string; s: number }
  /** A member left. */
  | { kind: 'leave'; m: string }
  /** Member `m` has published the changes of the fence notices `t` to its listeners. */
  | { kind: 'ack'; m: string; t: string[] };

/**
 * How long a member's lease lasts (renewed every quarter of it). A member that stops answering
 * (paused, cut off, crashed) holds a write this long at most.
 */
export const FENCE_LEASE_MS = 3_000;
/**
 * A member stops serving this long before its lease as written, and a writer waits this long past
 * the lease as it heard it: timers fire late under load, and the member's clock and the writer's
 * run apart a little.
 */
export const FENCE_MARGIN_MS = 500;
const RENEW_EVERY_MS = FENCE_LEASE_MS / 4;
/** A fence notice's payload stays below NOTIFY's 8,000 bytes: past this, its ids become null. */
const FENCE_PAYLOAD_MOST = 7_000;

/** A write waiting for the fence (see PgChangeFeed.beginFence). */
export interface FenceWait {
  /** The notice carrying the token went out (committed): wait for the members to acknowledge it. */
  sent(): void;
  /** The notice could not be sent: stop waiting (the write is answered as failed). */
  abandon(): void;
  /** Resolves once no member can still serve a cache missing the write. Never rejects. */
  readonly done: Promise<void>;
}

interface Wait {
  /** The members still to acknowledge; null until the notice came back. */
  pending: Set<string> | null;
  timer: NodeJS.Timeout | null;
  settled: boolean;
  resolve: () => void;
}

const now = (): number => performance.now();

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
const DB_NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
/** A member's lease taken or renewed, and announced. $1 member, $2 lease ms, $3 channel, $4 notice. */
const RENEW_SQL = `WITH m AS (
    INSERT INTO feed_members (member, lease_until) VALUES ($1, ${DB_NOW_MS} + $2)
    ON CONFLICT (member) DO UPDATE SET lease_until = excluded.lease_until RETURNING member)
  SELECT pg_notify($3, $4) FROM m`;
/**
 * The sweep's question: the snapshot now, and the noted collections changed by transactions that
 * the snapshot $2 saw and the older $1 did not (see SWEEP_EVERY_MS).
 */
const SWEEP_SQL = `SELECT pg_current_snapshot()::text AS snapshot,
  ARRAY(SELECT DISTINCT collection FROM read_changes
        WHERE xid >= pg_snapshot_xmin($1::text::pg_snapshot) AND pg_visible_in_snapshot(xid, $2::text::pg_snapshot)
          AND NOT pg_visible_in_snapshot(xid, $1::text::pg_snapshot)) AS changed`;
/**
 * How often a member publishes the changes committed between its last two sweeps (so at least
 * this long after their commit): a change whose notice never came (its writer died between commit
 * and notice) is not kept from the caches for longer than about twice this. Not part of the fence's
 * promise (a write that resolved was heard), so it lags: changes whose notice came are published
 * again, long after, rather than a moment after they were.
 */
const SWEEP_EVERY_MS = 5_000;
const MEMBERS_SQL = `SELECT member FROM feed_members WHERE lease_until > ${DB_NOW_MS}`;

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
  /** This feed's name as a fence member and as a writer (tokens are `id:seq`). */
  readonly id = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
  #sequence = 0;
  /** Whether this feed serves caches under the fence (set by the first caughtUp). */
  #member = false;
  /** Local time until which this member's lease holds (0: not held). */
  #validUntil = 0;
  #renewTimer: NodeJS.Timeout | null = null;
  #sweepTimer: NodeJS.Timeout | null = null;
  #sweeping = false;
  /** The snapshots of the last two sweeps (see SWEEP_EVERY_MS). */
  #swept: { older: string | null; newer: string | null } = { older: null, newer: null };
  /** The renewal out now: when it was sent, and whether its answer and its own notice are in. */
  #renewal: { seq: number; sentAt: number; answered: boolean; heard: boolean } | null = null;
  /** Other members by name: when their lease was last heard of (local time). Valid while `#membersKnown`. */
  readonly #members = new Map<string, number>();
  #membersKnown = false;
  /** Writes of this store waiting for the fence, by token. */
  readonly #waits = new Map<string, Wait>();
  /** Tokens of other writers to acknowledge, sent together after the turn. */
  #acks: string[] = [];
  /** Statements on the LISTEN connection go one at a time (the driver's queue is deprecated). */
  #serial: Promise<unknown> = Promise.resolve();

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

  caughtUp(): true | Promise<boolean> {
    if (this.#fenced()) return true;
    if (!this.#member && this.#connected && !this.#closed) this.#join();
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
      const { rows } = await this.#run(client, () =>
        base ? client.query({ name: 'panelctl_changed_since', text: CHANGED_SINCE_SQL, values: [base.snapshot] }) : client.query(SNAPSHOT_SQL),
      );
      row = rows[0];
    } catch {
      // The connection failed under the question: `lost` reconnects; until then nothing is vouched for.
      return false;
    }
    this.#answered(base, row, at);
    return true;
  }

  /** The base snapshot a question asked at `at` may use: null when too old (see BASE_MOST_MS). */
  #baseFor(at: number): { snapshot: string; at: number } | null {
    return this.#base && at - this.#base.at < BASE_MOST_MS ? this.#base : null;
  }

  #answered(
    base: { snapshot: string; at: number } | null,
    row: { snapshot: string; changed?: Array<Extract<Change, { kind: 'record' }>['collection']> | null },
    at: number,
  ): void {
    // Each question's snapshot becomes the next one's base only after what it found is published,
    // so whatever a base saw has been told to the listeners.
    for (const collection of base ? (row.changed ?? []) : NOTED) this.#emit({ kind: 'record', collection, id: null });
    if (!this.#base || this.#base.at <= at) this.#base = { snapshot: row.snapshot, at };
  }

  /** Runs `statement` on the LISTEN connection once the statements before it are done. */
  #run<T>(client: pg.Client, statement: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(() => {
      if (this.#client !== client) throw new Error('the change feed connection was lost');
      return statement();
    });
    this.#serial = run.catch(() => undefined);
    return run;
  }

  /** Whether this member's fence holds: its caches are served without asking. */
  #fenced(): boolean {
    return this.#connected && now() < this.#validUntil;
  }

  /** Becomes a fence member: takes a lease now and renews it every RENEW_EVERY_MS. */
  #join(): void {
    this.#member = true;
    this.#renewTimer = setInterval(() => this.#renew(), RENEW_EVERY_MS);
    this.#renewTimer.unref();
    this.#sweepTimer = setInterval(() => this.#sweep(), SWEEP_EVERY_MS);
    this.#sweepTimer.unref();
    this.#renew();
    this.#sweep();
  }

  /**
   * Renews the lease (the first renewal on a connection joins). The lease holds locally from the
   * time the renewal was sent, so it ends here before it ends for any writer; and it is extended
   * only once both the renewal's answer and its own notice are in: notices arrive in commit
   * order, so every notice committed before the renewal has been heard, and published, by then.
   */
  #renew(): void {
    const client = this.#client;
    if (!client || !this.#connected || this.#closed) return;
    // One at a time; one whose answer or notice never came is given up after a lease.
    if (this.#renewal && now() - this.#renewal.sentAt < FENCE_LEASE_MS) return;
    const renewal = { seq: ++this.#sequence, sentAt: now(), answered: false, heard: false };
    this.#renewal = renewal;
    const notice = JSON.stringify({ kind: 'lease', m: this.id, s: renewal.seq });
    this.#run(client, () => client.query({ name: 'panelctl_feed_renew', text: RENEW_SQL, values: [this.id, FENCE_LEASE_MS, CHANNEL, notice] })).then(
      () => {
        if (this.#client !== client || this.#closed || this.#renewal !== renewal) return;
        renewal.answered = true;
        this.#renewed(renewal);
      },
      () => {
        // The connection failed under it: `lost` reconnects, and the lease lapses meanwhile.
        if (this.#renewal === renewal) this.#renewal = null;
      },
    );
  }

  /** Publishes the changes committed between the last two sweeps (see SWEEP_EVERY_MS). */
  #sweep(): void {
    const client = this.#client;
    if (!client || !this.#connected || this.#closed || this.#sweeping) return;
    const { older, newer } = this.#swept;
    this.#sweeping = true;
    this.#run(client, () =>
      older && newer ? client.query({ name: 'panelctl_feed_sweep', text: SWEEP_SQL, values: [older, newer] }) : client.query(SNAPSHOT_SQL),
    ).then(
      ({ rows }) => {
        this.#sweeping = false;
        if (this.#client !== client) return;
        for (const collection of rows[0].changed ?? []) this.#emit({ kind: 'record', collection, id: null });
        this.#swept = { older: newer, newer: rows[0].snapshot };
      },
      () => {
        this.#sweeping = false;
      },
    );
  }

  /** Extends the lease once the renewal's answer and notice are both in. */
  #renewed(renewal: { seq: number; sentAt: number; answered: boolean; heard: boolean }): void {
    if (!renewal.answered || !renewal.heard) return;
    this.#renewal = null;
    const wasFenced = this.#fenced();
    this.#validUntil = Math.max(this.#validUntil, renewal.sentAt + FENCE_LEASE_MS - FENCE_MARGIN_MS);
    // Fenced again (joined, or back after a lapse): whatever was cached or being filled before
    // is dropped, as writes meanwhile may not have waited for this member.
    if (!wasFenced && this.#fenced()) for (const collection of NOTED) this.#emit({ kind: 'record', collection, id: null });
  }

  /**
   * Starts a write's fence: the caller then sends a notice `{kind: 'fence', t: token, c: …}`
   * (see fenceNotice) and calls `sent` or `abandon`. Call only after the write committed.
   */
  beginFence(): { token: string; wait: FenceWait } {
    const token = `${this.id}:${++this.#sequence}`;
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const wait: Wait = { pending: null, timer: null, settled: false, resolve };
    const finish = () => {
      wait.settled = true;
      if (wait.timer) clearTimeout(wait.timer);
      this.#waits.delete(token);
      resolve();
    };
    wait.resolve = finish;
    // Registered before the notice goes out: it may come back before the sender hears it went.
    if (this.#connected && this.#membersKnown) this.#waits.set(token, wait);
    return {
      token,
      wait: {
        // Unheard (this connection down, or dropped before the notice came back), the write waits
        // a lease from here, after the notice committed: a member still serving then has renewed
        // since, and a renewal's own notice arrives after this one, so it has heard this one.
        sent: () => {
          if (!wait.timer && !wait.settled) this.#deadline(wait, now() + FENCE_LEASE_MS);
        },
        abandon: finish,
        done,
      },
    };
  }

  /** The notice of a fence: `changes` of cached collections, with ids dropped if it would be too long. */
  static fenceNotice(token: string, changes: Array<[string, number | null]>): string {
    const notice = JSON.stringify({ kind: 'fence', t: token, c: changes });
    if (notice.length <= FENCE_PAYLOAD_MOST) return notice;
    const collections = [...new Set(changes.map(([collection]) => collection))];
    return JSON.stringify({ kind: 'fence', t: token, c: collections.map((collection) => [collection, null]) });
  }

  /** Resolves `wait` at local time `at` at the latest. */
  #deadline(wait: Wait, at: number): void {
    if (wait.timer) clearTimeout(wait.timer);
    wait.timer = setTimeout(wait.resolve, Math.max(0, at - now()));
  }

  /** This store's own fence notice came back: every member it knows now must acknowledge it. */
  #ownFenceHeard(wait: Wait): void {
    const pending = new Set<string>();
    let latest = 0;
    const at = now();
    for (const [member, heard] of this.#members) {
      const ends = heard + FENCE_LEASE_MS + FENCE_MARGIN_MS;
      if (ends <= at) this.#members.delete(member);
      else {
        pending.add(member);
        latest = Math.max(latest, ends);
      }
    }
    if (pending.size === 0) return wait.resolve();
    wait.pending = pending;
    // Heard, so committed: a lease from now bounds the wait as in `sent`.
    this.#deadline(wait, Math.min(latest, at + FENCE_LEASE_MS));
  }

  #acknowledged(member: string, tokens: string[]): void {
    for (const token of tokens) {
      const wait = this.#waits.get(token);
      if (!wait?.pending) continue;
      wait.pending.delete(member);
      if (wait.pending.size === 0) wait.resolve();
    }
  }

  /** Acknowledges other writers' fence notices, all those heard in this turn in one notice. */
  #acknowledge(token: string): void {
    this.#acks.push(token);
    if (this.#acks.length > 1) return;
    setImmediate(() => {
      const tokens = this.#acks;
      this.#acks = [];
      const client = this.#client;
      if (!client || !this.#connected) return;
      const notice = JSON.stringify({ kind: 'ack', m: this.id, t: tokens });
      this.#run(client, () => client.query('SELECT pg_notify($1, $2)', [CHANNEL, notice])).catch(() => undefined);
    });
  }

  /** Connects and LISTENs; rejects when the first connection fails. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#validUntil = 0;
    const client = this.#client;
    if (this.#member && client && this.#connected) {
      // Leaving: writers stop waiting for this member at once (its fence no longer holds).
      const notice = JSON.stringify({ kind: 'leave', m: this.id });
      await this.#run(client, () =>
        client.query('WITH gone AS (DELETE FROM feed_members WHERE member = $1) SELECT pg_notify($2, $3)', [this.id, CHANNEL, notice]),
      ).catch(() => undefined);
    }
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
      this.#validUntil = 0;
      this.#renewal = null;
      // Reconnecting announces everything: the sweep starts over.
      this.#swept = { older: null, newer: null };
      this.#membersKnown = false;
      this.#members.clear();
      // Acknowledgements can no longer be heard: the waits fall back to their leases.
      for (const wait of this.#waits.values()) wait.pending = null;
      this.#waits.clear();
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
      // The members whose leases began before this connection listened (later ones are heard).
      // A lease found here was granted before now, so it ends here no later than this time + LEASE.
      const members = await client.query<{ member: string }>(MEMBERS_SQL);
      const heard = now();
      for (const { member } of members.rows) if (member !== this.id && !this.#members.has(member)) this.#members.set(member, heard);
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
    this.#serial = Promise.resolve();
    this.#membersKnown = true;
    this.#retryMs = RETRY_MIN_MS;
    this.#setConnected(true);
    if (this.#member) this.#renew();
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
    else if (notice.kind === 'fence') {
      for (const [collection, id] of notice.c) this.#emit({ kind: 'record', collection, id });
      const wait = this.#waits.get(notice.t);
      if (wait) {
        if (!wait.pending) this.#ownFenceHeard(wait);
      } else if (this.#member && !notice.t.startsWith(`${this.id}:`)) this.#acknowledge(notice.t);
    } else if (notice.kind === 'lease') {
      if (notice.m !== this.id) this.#members.set(notice.m, now());
      else if (this.#renewal?.seq === notice.s) {
        this.#renewal.heard = true;
        this.#renewed(this.#renewal);
      }
    } else if (notice.kind === 'leave') {
      this.#members.delete(notice.m);
      this.#acknowledged(notice.m, [...this.#waits.keys()]);
    } else if (notice.kind === 'ack') this.#acknowledged(notice.m, notice.t);
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
