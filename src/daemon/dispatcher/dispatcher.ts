// The delivery worker. Several daemons may share one outbox, so work is taken in leased batch
// claims: a loop claims due deliveries for its free slots, launches the attempts, and records
// what finished meanwhile in one batch (log entries and outcomes, in one transaction). It
// sleeps until the next delivery falls due, the store reports new outbox work, or a short
// safety poll (another daemon's retries fall due without a notification).
//
// Fairness: at most `concurrency` attempts at once, `perEndpoint` to one endpoint and
// `perOwner` to one customer's endpoints (so a customer whose endpoints hang cannot take every
// slot), and an endpoint whose last attempt timed out or could not connect gets one attempt at
// a time until it answers again. Manual sends (test, redeliver) are claimed by id at once,
// outside those limits.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { StoreUnavailableError, type ClaimOptions, type DeliveryOutcome, type Store } from '../../store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, WebhookRecord } from '../../store/types.js';
import type { Clock } from '../services.js';
import type { AttemptResult, WebhookSender } from './sender.js';
import { UnavailableLog } from '../unavailable-log.js';
import { deliveryHeaders } from './headers.js';
import { NO_METRICS, reasonClass, type DaemonMetrics } from '../metrics/metrics.js';
import { RecentAttempts } from './recent-attempts.js';

export const USER_AGENT = 'Panel-WebPanel-Webhook/1.0';
export const MAX_ATTEMPTS = 2;
export const RETRY_DELAY_MS = 2_000;
export const LEASE_MS = 60_000;
/** Deliveries held per endpoint and owner, in flight plus claimed ahead, as a multiple of the caps. */
const AHEAD = 3;
/** A claim that found nothing is not repeated with the same skips sooner than this, unless work is announced. */
const RECHECK_MS = 250;
/**
 * While deliveries claimed ahead are still waiting for a slot, claims are this far apart at
 * least: a claim reads past every endpoint's leased deliveries, so many small claims (one per
 * freed slot) cost the database far more per delivery than fewer larger ones. 25 ms against
 * 10: the server's CPU per delivery fell a tenth and the rate rose (50 ms gained no more).
 */
const CLAIM_GAP_MS = 25;
/** A ready delivery's endpoint read longer ago than this is read again before its attempt. */
const ENDPOINT_FRESH_MS = 1_000;
/** How long a test or redeliver waits for the first attempt's log entry, whoever makes it. */
export const FIRST_ATTEMPT_WAIT_MS = 30_000;

/** A log entry with its endpoint's owner (null when the endpoint is gone). */
export type EntryListener = (entry: DeliveryLogEntry, ownerId: number | null) => void;

export interface DispatcherOptions {
  store: Store;
  clock: Clock;
  sender: WebhookSender;
  /** Whether private-network targets are allowed now (setting or daemon flag). */
  allowPrivate: () => Promise<boolean>;
  /** Attempts in flight at once, over all endpoints (default 256). */
  concurrency?: number;
  /** Attempts in flight at once to one endpoint (default 8). */
  perEndpoint?: number;
  /** Attempts in flight at once to one customer's endpoints (default 64). */
  perOwner?: number;
  retryDelayMs?: number;
  leaseMs?: number;
  /** The safety poll (default 1 s). */
  pollMs?: number;
  /** This dispatcher's lease owner id (default hostname:pid:random). */
  owner?: string;
  log?: { error(details: object, message: string): void; warn?(details: object, message: string): void };
  /** Told of each attempt's outcome, duration and lag (default NO_METRICS). */
  metrics?: DaemonMetrics;
}

/** Raised to a caller waiting for an attempt that will not be made (or logged). */
export class DeliveryNotAttempted extends Error {
  constructor(
    readonly reason: 'stopping' | 'endpoint gone' | 'not logged' | 'no answer',
    message: string,
  ) {
    super(message);
  }
}

interface Waiter {
  resolve: (entry: DeliveryLogEntry) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** An attempt that has ended, waiting to be recorded with the next batch. */
interface Finished {
  outcome: DeliveryOutcome;
  entry: Omit<DeliveryLogEntry, 'id'> | null;
  recorded: () => void;
  failed: (error: Error) => void;
}

/** A delivery claimed ahead of a free slot, with the read of its batch's endpoints. */
interface Ready {
  delivery: DeliveryRecord;
  endpoints: Promise<Map<number, WebhookRecord>>;
  /** When it was claimed (epoch ms). */
  at: number;
}

/** In-flight counts per key, dropping keys that reach zero. */
class Counts<K> {
  readonly #map = new Map<K, number>();
  get(key: K): number {
    return this.#map.get(key) ?? 0;
  }
  add(key: K, delta: number): void {
    const next = this.get(key) + delta;
    if (next <= 0) this.#map.delete(key);
    else this.#map.set(key, next);
  }
  entries(): IterableIterator<[K, number]> {
    return this.#map.entries();
  }
}

/** Which daemon made an attempt, as its log entry says: with several daemons on one database, the one to look at. */
const DAEMON = `${hostname()}:${process.pid}`;

export function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export class Dispatcher {
  readonly owner: string;
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #sender: WebhookSender;
  readonly #allowPrivate: () => Promise<boolean>;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #perOwner: number;
  readonly #retryDelayMs: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #log: DispatcherOptions['log'];
  /** A store that is down fails every turn and every batch: one line per interval for all of them. */
  readonly #unavailable = new UnavailableLog();
  readonly #metrics: DaemonMetrics;
  /** This daemon's attempts of the last minute (daemon status). */
  readonly recent = new RecentAttempts();
  /** When the claim loop last began a turn (performance.now()), for readiness; null before the first. */
  #turnedAt: number | null = null;

  #active = 0;
  readonly #byEndpoint = new Counts<number>();
  readonly #byOwner = new Counts<number>();
  /** Endpoints whose last attempt got no answer: one attempt at a time until one succeeds. */
  readonly #backoff = new Set<number>();
  /** Attempts launched and not yet recorded, by delivery id. */
  readonly #jobs = new Map<string, Promise<void>>();
  /** Manual deliveries to claim at once. */
  readonly #manual = new Set<string>();
  /** Claimed ahead, waiting for a slot, in claim order (see #claimDue). */
  readonly #ready = new Map<string, Ready>();
  readonly #readyByEndpoint = new Counts<number>();
  readonly #readyByOwner = new Counts<number>();

  #finished: Finished[] = [];
  #flushScheduled = false;
  #flushing: Promise<void> | null = null;

  #running = false;
  #stopping = false;
  #loop: Promise<void> | null = null;
  #dirty = false;
  /** When the last claim of due deliveries was made, and how long the loop waits to claim again (see CLAIM_GAP_MS). */
  #claimedAt = 0;
  #deferred = 0;
  /** Room offered to publishes in flight (see #offer). */
  #offered = 0;
  /** The skips of the last claim and when it was made, when it found nothing (see #claimDue). */
  #foundNothing: { skips: string; at: number } | null = null;
  #wakeSleeper: (() => void) | null = null;
  #unsubscribe: () => void = () => undefined;

  readonly #listeners = new Set<EntryListener>();
  /**
   * Entries already passed on, when the feed is not synchronous (PostgreSQL's): this daemon's own
   * come both from its batch and, a moment before or after, from the database's notification.
   * At most the last few thousand ids.
   */
  readonly #told = new Set<number>();
  /** Told of this daemon's own attempts once recorded (log lines, auto-disable). */
  readonly #attemptListeners = new Set<(entry: DeliveryLogEntry) => void>();
  readonly #waiters = new Map<string, Waiter>();
  /** Endpoint owners for stream filtering, dropped on any webhooks change. */
  readonly #owners = new Map<number, number | null>();
  /** Log entries are handed to listeners in the order the store reported them. */
  #entryChain: Promise<void> = Promise.resolve();

  constructor(options: DispatcherOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#sender = options.sender;
    this.#allowPrivate = options.allowPrivate;
    this.#concurrency = options.concurrency ?? 256;
    this.#perEndpoint = options.perEndpoint ?? 8;
    this.#perOwner = options.perOwner ?? 64;
    this.#retryDelayMs = options.retryDelayMs ?? RETRY_DELAY_MS;
    this.#leaseMs = options.leaseMs ?? LEASE_MS;
    this.#pollMs = options.pollMs ?? 1_000;
    this.owner = options.owner ?? defaultOwnerId();
    this.#log = options.log;
    this.#metrics = options.metrics ?? NO_METRICS;
  }

  /**
   * Whether the claim loop runs and how long ago it last turned (ms): it turns at least every
   * poll (1 s) while it is healthy, so a long silence means it waits on something stuck.
   */
  loopState(): { running: boolean; sinceTurnMs: number | null } {
    return { running: this.#running && !this.#stopping, sinceTurnMs: this.#turnedAt === null ? null : performance.now() - this.#turnedAt };
  }

  /** Starts the claim loop (pending deliveries from before a restart go out as they fall due). */
  start(): void {
    if (this.#running || this.#stopping) return;
    this.#running = true;
    this.#unsubscribe = this.#store.changes.subscribe((change) => {
      if (change.kind === 'outbox') {
        this.#foundNothing = null;
        this.#wake();
      }
      else if (change.kind === 'log') this.#onLogged(change.entry);
      else if (change.kind === 'logged') this.#onLoggedIds(change.ids);
      else if (change.collection === 'webhooks') this.#owners.clear();
    });
    this.#store.takeOnPublish({ offer: () => this.#offer(), take: (offer, deliveries) => this.#take(offer, deliveries) });
    this.#loop = this.#run().catch((error) => this.#log?.error({ err: error }, 'the webhook dispatcher stopped'));
  }

  /**
   * Stops claiming, lets attempts in flight finish (each is bounded by its time-out) and
   * records them; everything else stays pending in the outbox, for this daemon's next start
   * or another daemon.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#running) this.#store.takeOnPublish(null);
    this.#wake();
    for (const [id, waiter] of this.#waiters) {
      if (this.#jobs.has(id)) continue;
      this.#settleWaiter(id, null, new DeliveryNotAttempted('stopping', 'the daemon is stopping; the delivery stays queued and is made after it starts again'));
    }
    await this.#loop;
    // Claimed ahead and never started: back to the outbox for the next start or another daemon.
    const ready = [...this.#ready.values()].map((item) => item.delivery);
    for (const delivery of ready) this.#unready(delivery.id, delivery);
    await this.#releaseUnstarted(ready);
    await Promise.allSettled([...this.#jobs.values()]);
    await this.#flush();
    // The entries of the last attempts reach the open streams before those are ended.
    await this.#entryChain;
    this.#unsubscribe();
    await this.#sender.close();
  }

  /**
   * Resolves with the log entry of a delivery's first attempt, made by this daemon or another.
   * Call it before the delivery is queued (with an id chosen beforehand), so the entry cannot
   * be missed.
   */
  firstAttempt(deliveryId: string): Promise<DeliveryLogEntry> {
    if (this.#stopping) return Promise.reject(new DeliveryNotAttempted('stopping', 'the daemon is stopping'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          this.#settleWaiter(
            deliveryId,
            null,
            new DeliveryNotAttempted('no answer', `the delivery is queued, but its first attempt was not logged within ${FIRST_ATTEMPT_WAIT_MS / 1000} s`),
          ),
        FIRST_ATTEMPT_WAIT_MS,
      );
      timer.unref();
      this.#waiters.set(deliveryId, { resolve, reject, timer });
    });
  }

  /** Stops waiting (the delivery could not be queued). */
  forget(deliveryId: string): void {
    const waiter = this.#waiters.get(deliveryId);
    if (waiter) clearTimeout(waiter.timer);
    this.#waiters.delete(deliveryId);
  }

  /** Claims a queued manual delivery at once, whatever the slots in use. */
  sendNow(deliveryId: string): void {
    if (!this.#running || this.#stopping) return;
    this.#manual.add(deliveryId);
    this.#wake();
  }

  /** Calls `listener` with each attempt this daemon made, once recorded; returns the unsubscribe. */
  onAttempt(listener: (entry: DeliveryLogEntry) => void): () => void {
    this.#attemptListeners.add(listener);
    return () => this.#attemptListeners.delete(listener);
  }

  /** Calls `listener` with every new log entry (any daemon's) and its endpoint's owner; returns the unsubscribe. */
  onEntry(listener: EntryListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Entries newer than `entryId`, oldest first, with their owners (for a reconnecting stream). */
  async entriesSince(entryId: number, limit = 500): Promise<Array<{ entry: DeliveryLogEntry; ownerId: number | null }>> {
    const entries = await this.#store.deliveryLog.since(entryId, limit);
    const out = [];
    for (const entry of entries) out.push({ entry, ownerId: await this.#ownerOf(entry.endpoint_id) });
    return out;
  }

  get inFlightCount(): number {
    return this.#active;
  }

  // --- the claim loop -------------------------------------------------------------------

  #wake(): void {
    this.#dirty = true;
    const wake = this.#wakeSleeper;
    this.#wakeSleeper = null;
    wake?.();
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      this.#turnedAt = performance.now();
      this.#dirty = false;
      let wait = this.#pollMs;
      try {
        await this.#claimManual();
        await this.#claimDue();
        // Woken meanwhile (a slot came free, work was queued): claim again before asking when
        // the next delivery falls due, a query the next turn may not need.
        if (this.#dirty || this.#stopping) continue;
        if (this.#deferred > 0) {
          // Claimed a moment ago, and claimed deliveries still wait for slots: claim after the gap.
          wait = this.#deferred;
        } else {
          const due = await this.#store.outbox.nextDueAt();
          const now = this.#clock();
          // Due now but not claimable (leased, or its endpoint or owner at its limit): an attempt
          // ending brings us back, or a look every RECHECK_MS, since another daemon's leases (a
          // dead one's among them) end without a word.
          if (due !== null) wait = due > now ? Math.min(due - now, this.#pollMs) : Math.min(RECHECK_MS, this.#pollMs);
        }
      } catch (error) {
        this.#failed(error, {}, 'could not take webhook deliveries from the outbox');
      }
      if (this.#dirty || this.#stopping) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#wakeSleeper = null;
          // Retries fall due without a word: look afresh.
          this.#foundNothing = null;
          resolve();
        }, wait);
        this.#wakeSleeper = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async #claimManual(): Promise<void> {
    if (this.#manual.size === 0) return;
    const ids = [...this.#manual];
    this.#manual.clear();
    const claimed = await this.#store.outbox.claim({
      owner: this.owner,
      now: this.#clock(),
      leaseMs: this.#leaseMs,
      limit: ids.length,
      perEndpoint: ids.length,
      ids,
    });
    // Claimed by another daemon (or already attempted): its log entry reaches the waiter through the change feed.
    if (this.#stopping) return this.#releaseUnstarted(claimed);
    const endpoints = this.#readEndpoints(claimed);
    for (const delivery of claimed) this.#launch(delivery, endpoints);
  }

  /** The cap of one endpoint now: 1 while it is backing off. */
  #endpointCap(endpointId: number): number {
    return this.#backoff.has(endpointId) ? 1 : this.#perEndpoint;
  }

  /**
   * Claims ahead: deliveries are leased up to three times the caps (in flight plus ready to
   * start), so a slot that comes free is filled from the ready ones at once, without waiting for
   * a claim, and claims are fewer and larger: an endpoint or owner is claimed for again once a
   * whole cap is free of the three, and a claim that found nothing is not made again with
   * the same skips for RECHECK_MS unless work is announced (a dead daemon's leases end
   * unannounced, and slot releases keep the safety poll from coming round). An endpoint that
   * is backing off is not claimed ahead.
   */
  async #claimDue(): Promise<void> {
    this.#deferred = 0;
    for (let round = 0; round < 16 && !this.#stopping; round++) {
      this.#launchReady();
      const room = AHEAD * this.#concurrency - this.#active - this.#ready.size;
      if (room < this.#concurrency / 2) return;
      const since = this.#clock() - this.#claimedAt;
      if (this.#ready.size > 0 && since < CLAIM_GAP_MS) {
        this.#deferred = CLAIM_GAP_MS - since;
        return;
      }
      const { perEndpoint, skipEndpoints, skipOwners, ownerRoom } = this.#limits();
      const skips = `${skipEndpoints.join(',')}|${skipOwners.join(',')}`;
      const nothing = this.#foundNothing;
      if (nothing && nothing.skips === skips && this.#clock() - nothing.at < RECHECK_MS) return;
      this.#claimedAt = this.#clock();
      const claimed = await this.#store.outbox.claim({
        owner: this.owner,
        now: this.#clock(),
        leaseMs: this.#leaseMs,
        limit: Math.min(room, 256),
        perEndpoint,
        skipEndpoints,
        skipOwners,
        perOwner: AHEAD * this.#perOwner,
        ownerRoom,
      });
      if (this.#stopping) return this.#releaseUnstarted(claimed);
      this.#foundNothing = claimed.length === 0 ? { skips, at: this.#clock() } : null;
      this.#hold(claimed);
      if (claimed.length === 0) return;
    }
  }

  /**
   * What a claim may take now: endpoints and owners with a whole cap free of the three held
   * ahead (sorted), at most the least room of the others per endpoint, one of an idle endpoint
   * that is backing off.
   */
  #limits(): { perEndpoint: number; skipEndpoints: number[]; skipOwners: number[]; ownerRoom: Array<[number, number]> } {
    const skipEndpoints: number[] = [];
    let perEndpoint = AHEAD * this.#perEndpoint;
    for (const endpointId of this.#heldKeys(this.#byEndpoint, this.#readyByEndpoint)) {
      const backingOff = this.#backoff.has(endpointId);
      const left = (backingOff ? 1 : AHEAD * this.#perEndpoint) - this.#held(this.#byEndpoint, this.#readyByEndpoint, endpointId);
      if (left <= 0 || (!backingOff && left < this.#perEndpoint)) skipEndpoints.push(endpointId);
      else perEndpoint = Math.min(perEndpoint, left);
    }
    // An idle endpoint that is backing off may take one only.
    for (const endpointId of this.#backoff) if (this.#held(this.#byEndpoint, this.#readyByEndpoint, endpointId) === 0) perEndpoint = 1;
    const skipOwners: number[] = [];
    const ownerRoom: Array<[number, number]> = [];
    for (const ownerId of this.#heldKeys(this.#byOwner, this.#readyByOwner)) {
      const left = AHEAD * this.#perOwner - this.#held(this.#byOwner, this.#readyByOwner, ownerId);
      if (left < this.#perOwner) skipOwners.push(ownerId);
      else ownerRoom.push([ownerId, left]);
    }
    skipEndpoints.sort((a, b) => a - b);
    skipOwners.sort((a, b) => a - b);
    return { perEndpoint, skipEndpoints, skipOwners, ownerRoom };
  }

  /** Claimed (or taken at publish) deliveries wait for a slot among the ready ones; those with room start now. */
  #hold(deliveries: DeliveryRecord[]): void {
    const endpoints = this.#readEndpoints(deliveries);
    const at = this.#clock();
    for (const delivery of deliveries) {
      if (this.#ready.has(delivery.id) || this.#jobs.has(delivery.id)) continue;
      this.#ready.set(delivery.id, { delivery, endpoints, at });
      this.#readyByEndpoint.add(delivery.endpoint_id, 1);
      if (delivery.owner_id !== null) this.#readyByOwner.add(delivery.owner_id, 1);
    }
    this.#launchReady();
  }

  /**
   * Room for the deliveries of one publish, taken without a claim (see Store.takeOnPublish):
   * the claim's limits, at most one cap of an endpoint, and of the room ahead what other
   * publishes in flight were not offered. Endpoints that are backing off take none this way.
   */
  #offer(): ClaimOptions | null {
    if (!this.#running || this.#stopping) return null;
    const room = AHEAD * this.#concurrency - this.#active - this.#ready.size - this.#offered;
    if (room <= 0) return null;
    const { perEndpoint, skipEndpoints, skipOwners, ownerRoom } = this.#limits();
    const limit = Math.min(room, 256);
    this.#offered += limit;
    return {
      owner: this.owner,
      now: this.#clock(),
      leaseMs: this.#leaseMs,
      limit,
      perEndpoint: Math.min(perEndpoint, this.#perEndpoint),
      skipEndpoints: [...new Set([...skipEndpoints, ...this.#backoff])],
      skipOwners,
      perOwner: AHEAD * this.#perOwner,
      ownerRoom,
    };
  }

  /** The deliveries leased under an offer, committed: held as a claim's are (given back if stopping). */
  #take(offer: ClaimOptions, deliveries: DeliveryRecord[]): void {
    this.#offered -= offer.limit;
    if (deliveries.length === 0) return;
    if (this.#stopping) {
      void this.#releaseUnstarted(deliveries);
      return;
    }
    this.#hold(deliveries);
  }

  /** Held (in flight or ready) of one endpoint or owner. */
  #held(inFlight: Counts<number>, ready: Counts<number>, key: number): number {
    return inFlight.get(key) + ready.get(key);
  }

  /** Endpoints or owners with anything held. */
  #heldKeys(inFlight: Counts<number>, ready: Counts<number>): Set<number> {
    const keys = new Set<number>();
    for (const [key] of inFlight.entries()) keys.add(key);
    for (const [key] of ready.entries()) keys.add(key);
    return keys;
  }

  /**
   * Starts the ready deliveries that have room now, oldest claimed first. Those held for half a
   * lease (an endpoint slow to answer) are given back for any dispatcher to claim afresh, and
   * endpoints read more than a second ago are read again, so an attempt signs with a current secret.
   */
  #launchReady(): void {
    if (this.#ready.size === 0) return;
    const now = this.#clock();
    const stale: DeliveryRecord[] = [];
    const reread: Ready[] = [];
    for (const [id, item] of this.#ready) {
      const { delivery } = item;
      if (now - item.at >= this.#leaseMs / 2) {
        this.#unready(id, delivery);
        stale.push(delivery);
        continue;
      }
      if (this.#active >= this.#concurrency) break;
      const ownerFull = delivery.owner_id !== null && this.#byOwner.get(delivery.owner_id) >= this.#perOwner;
      if (ownerFull || this.#byEndpoint.get(delivery.endpoint_id) >= this.#endpointCap(delivery.endpoint_id)) continue;
      this.#unready(id, delivery);
      if (now - item.at > ENDPOINT_FRESH_MS) reread.push(item);
      else this.#launch(delivery, item.endpoints);
    }
    if (reread.length) {
      const endpoints = this.#readEndpoints(reread.map((x) => x.delivery));
      for (const { delivery } of reread) this.#launch(delivery, endpoints);
    }
    if (stale.length) void this.#releaseUnstarted(stale);
  }

  #unready(id: string, delivery: DeliveryRecord): void {
    this.#ready.delete(id);
    this.#readyByEndpoint.add(delivery.endpoint_id, -1);
    if (delivery.owner_id !== null) this.#readyByOwner.add(delivery.owner_id, -1);
  }

  async #releaseUnstarted(deliveries: DeliveryRecord[]): Promise<void> {
    if (deliveries.length === 0) return;
    try {
      await this.#store.outbox.release(
        this.owner,
        deliveries.map((d) => d.id),
      );
    } catch (error) {
      // Their leases end on their own; another claim takes them then.
      this.#failed(error, {}, 'could not release claimed webhook deliveries');
    }
  }

  // --- attempts -------------------------------------------------------------------------

  /**
   * The endpoints of one claimed batch, in one read (a read per attempt was the dispatcher's
   * largest share of queries on PostgreSQL). An attempt starts within a second of the read (a
   * ready one waiting longer reads again), so it signs with the secret current when it is made.
   * A failed read fails the attempts that wait on it.
   */
  #readEndpoints(deliveries: DeliveryRecord[]): Promise<Map<number, WebhookRecord>> {
    if (deliveries.length === 0) return Promise.resolve(new Map());
    const ids = [...new Set(deliveries.map((d) => d.endpoint_id))];
    const read = this.#store.webhooks.getMany(ids).then((endpoints) => new Map(endpoints.map((e) => [e.id, e])));
    // Every launched attempt awaits it; none may be launched (all over a limit).
    read.catch(() => undefined);
    return read;
  }

  #launch(delivery: DeliveryRecord, endpoints: Promise<Map<number, WebhookRecord>>): void {
    // Claimed again while this daemon's attempt is still going (its lease ended first, on a slow
    // machine or receiver): that attempt records the outcome; a second one would send it twice.
    if (this.#jobs.has(delivery.id)) return;
    const endpointId = delivery.endpoint_id;
    const ownerId = delivery.owner_id;
    this.#active++;
    this.#byEndpoint.add(endpointId, 1);
    if (ownerId !== null) this.#byOwner.add(ownerId, 1);
    // The slot is for the network exchange: it is freed once the answer is in (a turn later,
    // so undici has the connection back in its pool before the next attempt looks for one),
    // while the outcome waits for the next batch. Its retry is claimable only once recorded.
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.#active--;
      this.#byEndpoint.add(endpointId, -1);
      if (ownerId !== null) this.#byOwner.add(ownerId, -1);
      if (this.#stopping) return;
      // A ready delivery takes the slot now, even while the loop waits for a claim.
      this.#launchReady();
      this.#wake();
    };
    const job = this.#attempt(delivery, endpoints, () => setImmediate(release))
      .catch((error) => {
        this.#failed(error, { delivery_id: delivery.id }, 'webhook attempt failed to be recorded');
        this.#settleWaiter(delivery.id, null, new DeliveryNotAttempted('not logged', 'the attempt was made but could not be logged'));
      })
      .finally(() => {
        setImmediate(release);
        this.#jobs.delete(delivery.id);
      });
    this.#jobs.set(delivery.id, job);
  }

  /** One attempt of one delivery; resolves once its outcome (and log entry) is recorded. */
  async #attempt(delivery: DeliveryRecord, endpoints: Promise<Map<number, WebhookRecord>>, answered: () => void): Promise<void> {
    const endpoint = (await endpoints).get(delivery.endpoint_id);
    if (!endpoint || (!endpoint.active && !delivery.manual)) {
      // Deleted, or deactivated after the event was queued: it no longer receives events.
      answered();
      this.#settleWaiter(
        delivery.id,
        null,
        new DeliveryNotAttempted('endpoint gone', endpoint ? 'the endpoint was deactivated' : 'the endpoint was deleted'),
      );
      await this.#record({ id: delivery.id, state: 'cancelled', attempts: delivery.attempts, next_attempt_at: delivery.next_attempt_at }, null);
      return;
    }
    const attempt = delivery.attempts + 1;
    // Signed with the secret read as the batch was claimed (a retry is claimed anew), so a rotation applies to retries too.
    const headers = deliveryHeaders(endpoint, delivery, this.#clock());
    const createdAt = new Date(this.#clock()).toISOString();
    let result: AttemptResult;
    try {
      result = await this.#sender.send(endpoint.url, headers, delivery.body, await this.#allowPrivate());
    } finally {
      answered();
    }
    this.recent.add(Date.now(), result.success);
    if (this.#metrics.enabled) {
      this.#metrics.attempt(result.success, reasonClass(result.status_code, result.reason), result.duration_ms / 1000);
      if (attempt === 1) this.#metrics.deliveryLag((Date.parse(createdAt) - Date.parse(delivery.created_at)) / 1000);
    }
    // No answer at all (time-out, refused or failed connection): one attempt at a time until it answers.
    if (result.success) this.#backoff.delete(endpoint.id);
    else if (result.status_code === 0) this.#backoff.add(endpoint.id);
    const state: DeliveryRecord['state'] = result.success ? 'succeeded' : attempt >= MAX_ATTEMPTS ? 'failed' : 'pending';
    await this.#record(
      {
        id: delivery.id,
        attempts: attempt,
        state,
        next_attempt_at: state === 'pending' ? this.#clock() + this.#retryDelayMs : delivery.next_attempt_at,
      },
      {
        event: delivery.event,
        payload: parsePayload(delivery.body),
        status_code: result.status_code,
        response: result.response,
        success: result.success,
        duration_ms: result.duration_ms,
        created_at: createdAt,
        attempt,
        delivery_id: delivery.id,
        endpoint_id: endpoint.id,
        request_headers: headers,
        reason: result.reason,
        daemon: DAEMON,
      },
    );
  }

  /** Queues an outcome for the next batch; resolves once the batch is written (rejects if it was not). */
  #record(outcome: DeliveryOutcome, entry: Omit<DeliveryLogEntry, 'id'> | null): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#finished.push({ outcome, entry, recorded: resolve, failed: reject });
      this.#scheduleFlush();
    });
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // Everything that finishes in this turn of the event loop goes into one batch.
    setImmediate(() => {
      this.#flushScheduled = false;
      void this.#flush();
    });
  }

  /** Writes the finished attempts: their log entries and outcomes in one write. One batch at a time. */
  async #flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#finished.length === 0) return;
    const batch = this.#finished;
    this.#finished = [];
    this.#flushing = (async () => {
      const entries = batch.flatMap((item) => (item.entry ? [item.entry] : []));
      try {
        const logged = await this.#store.outbox.record(
          this.owner,
          batch.map((item) => item.outcome),
          entries,
        );
        for (const item of batch) item.recorded();
        // With a feed that is not synchronous, this daemon's own entries reach its streams and
        // waiters at once, not after the database's notification (which may come after a stop).
        if (!this.#store.changes.synchronous) for (const entry of logged) this.#onLogged(entry);
        for (const entry of logged) {
          for (const listener of this.#attemptListeners) {
            try {
              listener(entry);
            } catch (error) {
              this.#log?.error({ err: error }, 'attempt listener failed');
            }
          }
        }
      } catch (error) {
        // Not recorded: the leases end and the deliveries are attempted again (receivers
        // deduplicate by X-Webhook-Delivery).
        this.#failed(error, { deliveries: batch.length }, 'could not record webhook attempts');
        for (const item of batch) item.failed(error as Error);
      }
    })();
    try {
      await this.#flushing;
    } finally {
      this.#flushing = null;
    }
    if (this.#finished.length) this.#scheduleFlush();
    // Retries now wait in the outbox, due in 2 s: the loop looks at when.
    if (!this.#stopping) this.#wake();
  }

  // --- log entries (any daemon's) -------------------------------------------------------

  #onLogged(entry: DeliveryLogEntry): void {
    if (!this.#store.changes.synchronous) {
      if (this.#told.has(entry.id)) return;
      this.#told.add(entry.id);
      if (this.#told.size > 5_000) for (const id of [...this.#told].slice(0, 2_500)) this.#told.delete(id);
    }
    if (entry.attempt === 1) this.#settleWaiter(entry.delivery_id, entry, null);
    if (this.#listeners.size === 0) return;
    this.#entryChain = this.#entryChain
      .then(async () => {
        const ownerId = await this.#ownerOf(entry.endpoint_id);
        for (const listener of this.#listeners) {
          try {
            listener(entry, ownerId);
          } catch (error) {
            this.#log?.error({ err: error }, 'delivery listener failed');
          }
        }
      })
      .catch((error) => this.#failed(error, {}, 'could not look up the owner of a delivery log entry'));
  }

  /**
   * Entries announced by id (a shared database): read only when someone here waits for a first
   * attempt or watches deliveries, in the order announced. This daemon's own are known already.
   */
  #onLoggedIds(ids: number[]): void {
    if (this.#waiters.size === 0 && this.#listeners.size === 0) return;
    const fresh = ids.filter((id) => !this.#told.has(id));
    if (fresh.length === 0) return;
    this.#entryChain = this.#entryChain
      .then(async () => {
        for (const entry of await this.#store.deliveryLog.getMany(fresh)) this.#onLogged(entry);
      })
      .catch((error) => this.#failed(error, {}, 'could not read new delivery log entries'));
  }

  async #ownerOf(endpointId: number): Promise<number | null> {
    const known = this.#owners.get(endpointId);
    if (known !== undefined) return known;
    const endpoint = await this.#store.webhooks.get(endpointId);
    const ownerId = endpoint?.user_id ?? null;
    if (this.#owners.size >= 10_000) this.#owners.clear();
    this.#owners.set(endpointId, ownerId);
    return ownerId;
  }

  /** Logs a failure: a store that is down once per interval (without a stack), anything else as it comes. */
  #failed(error: unknown, details: object, message: string): void {
    const log = this.#log;
    if (!log) return;
    if (error instanceof StoreUnavailableError) {
      this.#unavailable.note(error, `the store is unavailable: webhook deliveries wait for it (${message})`, (d, m) => (log.warn ?? log.error).call(log, d, m));
    } else log.error({ err: error, ...details }, message);
  }

  #settleWaiter(deliveryId: string, entry: DeliveryLogEntry | null, error: Error | null): void {
    const waiter = this.#waiters.get(deliveryId);
    if (!waiter) return;
    this.#waiters.delete(deliveryId);
    clearTimeout(waiter.timer);
    if (entry) waiter.resolve(entry);
    else waiter.reject(error!);
  }
}

function parsePayload(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}
