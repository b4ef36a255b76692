// The delivery worker, wired from its parts: the claimer (asks the store for due deliveries),
// the scheduler (what is claimed and what runs next), the attempt runner (one request and its
// outcome), the recorder (batched writes of outcomes and log entries) and the log relay
// (entries to streams and waiters). Several daemons may share one outbox, so work is taken in
// leased claims. This file only connects them: which attempt starts, what its answer frees,
// and what its recorded outcome tells.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { StoreUnavailableError, type Store } from '../../store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, WebhookRecord } from '../../store/types.js';
import type { Clock } from '../services.js';
import { UnavailableLog } from '../unavailable-log.js';
import { NO_METRICS, reasonClass, type DaemonMetrics } from '../metrics/metrics.js';
import { isOperational } from '../../shared/events.js';
import { EventBus } from './bus.js';
import { Claimer } from './claimer.js';
import { RecentAttempts } from './recent-attempts.js';
import { runAttempt, type AttemptRun, type Sender } from './attempt-runner.js';
import { DeliveryNotAttempted, LogRelay, type EntryListener } from './log-relay.js';
import { Recorder } from './recorder.js';
import { SecretSweep } from './secret-sweep.js';
import { DEFAULT_POLICY, Scheduler, policyOfRecord, type Answer, type EndpointPolicy, type Held, type PolicyOf } from './scheduler.js';

export { DeliveryNotAttempted, type EntryListener } from './log-relay.js';

export const LEASE_MS = 60_000;
/**
 * A ready delivery whose endpoint was read longer ago than this is read again before its
 * attempt, so an attempt signs with the secret current when it is made (within this).
 */
const ENDPOINT_FRESH_MS = 1_000;

/**
 * The endpoints of one claimed batch, read in one go; `found` is set once the read is in, so
 * the batch's attempts after the first take it without waiting a turn.
 */
type EndpointsRead = { at: number; endpoints: Promise<Map<number, WebhookRecord>>; found?: Map<number, WebhookRecord> };

export interface DispatcherOptions {
  store: Store;
  clock: Clock;
  sender: Sender;
  /** Whether private-network targets are allowed now (setting or daemon flag). */
  allowPrivate: () => boolean | Promise<boolean>;
  /** Attempts in flight at once, over all endpoints (default 256). */
  concurrency?: number;
  /** Attempts in flight at once to one customer's endpoints (default 64). */
  ownerShare?: number;
  /** Each endpoint's policy (default: read from the endpoint's record, as last read). */
  policyOf?: PolicyOf;
  leaseMs?: number;
  /** The safety poll (default 1 s). */
  pollMs?: number;
  /** This dispatcher's lease owner id (default hostname:pid:random). */
  owner?: string;
  log?: { error(details: object, message: string): void; warn?(details: object, message: string): void };
  /** Told of each attempt's outcome, duration and lag (default NO_METRICS). */
  metrics?: DaemonMetrics;
  /** Where operational events (delivery.failed) are published (default: a bus on `store`). */
  events?: Pick<EventBus, 'publish'>;
}

/** The longest string a catalogue field takes (src/shared/events.ts). */
const FIELD_MAX = 1000;

export function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export class Dispatcher {
  readonly owner: string;
  /** This daemon's attempts of the last minute (daemon status). */
  readonly recent = new RecentAttempts();
  /** Hand-backs to the outbox not yet answered (see ClaimerOptions.handingBack). */
  readonly #handingBack = new Set<Promise<void>>();
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #sender: Sender;
  readonly #allowPrivate: () => boolean | Promise<boolean>;
  readonly #policyOf: PolicyOf;
  /** Each endpoint's policy as its record was last read (a claimed batch's read refreshes it). */
  readonly #policies = new Map<number, EndpointPolicy>();
  readonly #log: DispatcherOptions['log'];
  readonly #metrics: DaemonMetrics;
  readonly #events: Pick<EventBus, 'publish'>;
  /** A store that is down fails every turn and every batch: one line per interval for all of them. */
  readonly #unavailable = new UnavailableLog();
  readonly #scheduler: Scheduler<EndpointsRead>;
  readonly #claimer: Claimer<EndpointsRead>;
  readonly #recorder: Recorder;
  readonly #relay: LogRelay;
  readonly #secretSweep: SecretSweep;
  /** Told of this daemon's own attempts once recorded (log lines, auto-disable). */
  readonly #attemptListeners = new Set<(entry: DeliveryLogEntry) => void>();
  /** Attempts started and not yet recorded, by delivery id. */
  readonly #jobs = new Map<string, Promise<void>>();
  /** Attempts answered in this turn of the event loop, whose slots are freed together at its end. */
  #answered: Array<{ id: string; answer: Answer }> = [];
  #unsubscribe: () => void = () => undefined;

  constructor(options: DispatcherOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#sender = options.sender;
    this.#allowPrivate = options.allowPrivate;
    this.#policyOf = options.policyOf ?? ((endpointId) => this.#policies.get(endpointId) ?? DEFAULT_POLICY);
    const leaseMs = options.leaseMs ?? LEASE_MS;
    this.owner = options.owner ?? defaultOwnerId();
    this.#log = options.log;
    this.#metrics = options.metrics ?? NO_METRICS;
    this.#events = options.events ?? new EventBus(this.#store, this.#clock);
    this.#scheduler = new Scheduler({
      concurrency: options.concurrency ?? 256,
      ownerShare: options.ownerShare ?? 64,
      holdMs: leaseMs / 2,
      policyOf: this.#policyOf,
    });
    this.#claimer = new Claimer({
      store: this.#store,
      clock: this.#clock,
      scheduler: this.#scheduler,
      owner: this.owner,
      leaseMs,
      pollMs: options.pollMs ?? 1_000,
      read: (deliveries) => this.#readEndpoints(deliveries),
      knows: (endpointId) => this.#policies.has(endpointId),
      beforeTurn: () => this.#secretSweep.tick(this.#clock()),
      launchReady: () => this.#launchReady(),
      launch: (held) => this.#launch(held),
      handBack: (deliveries) => this.#handBack(deliveries),
      handingBack: () => (this.#handingBack.size > 0 ? Promise.all(this.#handingBack).then(() => undefined) : null),
      failed: (error, message) => this.#failed(error, {}, message),
    });
    this.#secretSweep = new SecretSweep(this.#store, (error) => this.#failed(error, {}, 'could not drop expired previous secrets'));
    this.#relay = new LogRelay(this.#store, (error, message) => this.#failed(error, {}, message));
    this.#recorder = new Recorder({
      store: this.#store,
      owner: this.owner,
      written: (entries) => {
        this.#relay.written(entries);
        for (const entry of entries) this.#tellAttempt(entry);
        // Retries now wait in the outbox: the loop looks at when they fall due.
        this.#claimer.wake();
      },
      failedBatch: (error, size) => this.#failed(error, { deliveries: size }, 'could not record webhook attempts'),
    });
  }

  /**
   * Whether the claim loop runs and how long ago it last turned (ms): it turns at least every
   * poll (1 s) while it is healthy, so a long silence means it waits on something stuck.
   */
  loopState(): { running: boolean; sinceTurnMs: number | null } {
    return { running: this.#claimer.running, sinceTurnMs: this.#claimer.sinceTurnMs };
  }

  /** Starts the claim loop (pending deliveries from before a restart go out as they fall due). */
  start(): void {
    if (this.#claimer.state !== 'idle') return;
    this.#unsubscribe = this.#store.changes.subscribe((change) => {
      if (change.kind === 'outbox') this.#claimer.announced();
      else if (change.kind === 'logged') this.#relay.announced(change.ids);
      else if (change.collection === 'webhooks') this.#relay.endpointsChanged();
    });
    this.#claimer.start();
  }

  /**
   * Stops claiming, lets attempts in flight finish (each is bounded by its time-out) and
   * records them; everything else stays pending in the outbox, for this daemon's next start
   * or another daemon.
   */
  async stop(): Promise<void> {
    const wasRunning = this.#claimer.running;
    const stopped = this.#claimer.stop();
    for (const id of this.#relay.waiting()) {
      if (!this.#jobs.has(id)) this.#relay.settle(id, new DeliveryNotAttempted('stopping', 'the daemon is stopping; the delivery stays queued and is made after it starts again'));
    }
    await stopped;
    if (wasRunning) await this.#handBack(this.#scheduler.drainReady());
    await Promise.allSettled([...this.#jobs.values()]);
    await this.#recorder.flush();
    // Its attempts are recorded: the endpoints it held for their caps go to other daemons now.
    if (wasRunning) await this.#store.outbox.leave(this.owner).catch((error) => this.#failed(error, {}, 'could not hand over held endpoints'));
    // The entries of the last attempts reach the open streams before those are ended.
    await this.#relay.idle();
    this.#unsubscribe();
    await this.#sender.close();
  }

  /**
   * Resolves with the log entry of a delivery's first attempt, made by this daemon or another.
   * Call it before the delivery is queued (with an id chosen beforehand), so the entry cannot
   * be missed.
   */
  firstAttempt(deliveryId: string): Promise<DeliveryLogEntry> {
    if (this.#claimer.state === 'stopping') return Promise.reject(new DeliveryNotAttempted('stopping', 'the daemon is stopping'));
    return this.#relay.firstAttempt(deliveryId);
  }

  /** Stops waiting (the delivery could not be queued). */
  forget(deliveryId: string): void {
    this.#relay.forget(deliveryId);
  }

  /** Claims a queued manual delivery at once, whatever the slots in use. */
  sendNow(deliveryId: string): void {
    this.#claimer.claimNow(deliveryId);
  }

  /** Calls `listener` with each attempt this daemon made, once recorded; returns the unsubscribe. */
  onAttempt(listener: (entry: DeliveryLogEntry) => void): () => void {
    this.#attemptListeners.add(listener);
    return () => this.#attemptListeners.delete(listener);
  }

  /** Calls `listener` with every new log entry (any daemon's) and its endpoint's owner; returns the unsubscribe. */
  onEntry(listener: EntryListener): () => void {
    return this.#relay.onEntry(listener);
  }

  /** Entries newer than `entryId`, oldest first, with their owners (for a reconnecting stream). */
  entriesSince(entryId: number, limit = 500): Promise<Array<{ entry: DeliveryLogEntry; ownerId: number | null }>> {
    return this.#relay.entriesSince(entryId, limit);
  }

  get inFlightCount(): number {
    return this.#scheduler.running;
  }

  // --- starting attempts ------------------------------------------------------------

  /** Starts the ready deliveries that have room; hands back those held too long. */
  #launchReady(): void {
    if (!this.#claimer.running) return;
    const now = this.#clock();
    const { start, stale } = this.#scheduler.launchable(now);
    const reread = start.filter((held) => now - held.batch.at > ENDPOINT_FRESH_MS);
    if (reread.length) {
      const read = this.#readEndpoints(reread.map((held) => held.delivery));
      for (const held of reread) held.batch = read;
    }
    for (const held of start) this.#launch(held);
    void this.#handBack(stale);
  }

  /** Gives claimed deliveries back to the outbox for any dispatcher to claim. */
  #handBack(deliveries: DeliveryRecord[]): Promise<void> {
    if (deliveries.length === 0) return Promise.resolve();
    const done: Promise<void> = this.#release(deliveries).finally(() => this.#handingBack.delete(done));
    this.#handingBack.add(done);
    return done;
  }

  async #release(deliveries: DeliveryRecord[]): Promise<void> {
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

  /**
   * The endpoints of a claimed batch, in one read. A failed read fails the attempts that wait
   * on it (their leases end and they are claimed again).
   */
  #readEndpoints(deliveries: DeliveryRecord[]): EndpointsRead {
    const at = this.#clock();
    if (deliveries.length === 0) return { at, endpoints: Promise.resolve(new Map()), found: new Map() };
    const ids = [...new Set(deliveries.map((d) => d.endpoint_id))];
    const read: EndpointsRead = { at, endpoints: null! };
    read.endpoints = this.#store.webhooks.getMany(ids).then((list) => {
      // A rotation's overlap that has ended: its previous secret goes from the store now.
      if (list.some((e) => e.previous_secret_expires_at && Date.parse(e.previous_secret_expires_at) <= at)) {
        this.#store.webhooks.forgetExpiredSecrets(new Date(at).toISOString()).catch((error) => this.#failed(error, {}, 'could not drop expired previous secrets'));
      }
      const found = new Map(list.map((e) => [e.id, e]));
      // A deleted endpoint's policy goes with it.
      for (const id of ids) {
        const endpoint = found.get(id);
        if (endpoint) this.#policies.set(id, policyOfRecord(endpoint));
        else this.#policies.delete(id);
      }
      read.found = found;
      return found;
    });
    // Every launched attempt awaits it; none may be launched (all handed back).
    read.endpoints.catch(() => undefined);
    return read;
  }

  // --- attempts -------------------------------------------------------------------------

  #launch(held: Held<EndpointsRead>): void {
    this.#jobs.set(held.delivery.id, this.#job(held));
  }

  /** An attempt from start to its recorded outcome; never rejects. Its slot is freed once, at the answer or at the end. */
  async #job(held: Held<EndpointsRead>): Promise<void> {
    const { delivery } = held;
    let freed = false;
    try {
      await this.#attempt(held, (run) => {
        freed = true;
        this.#free(delivery.id, run.kind === 'made' ? run.answer : 'not attempted');
      });
    } catch (error) {
      this.#failed(error, { delivery_id: delivery.id }, 'webhook attempt failed to be recorded');
      this.#relay.settle(delivery.id, new DeliveryNotAttempted('not logged', 'the attempt was made but could not be logged'));
    } finally {
      if (!freed) this.#free(delivery.id, 'not attempted');
      this.#jobs.delete(delivery.id);
    }
  }

  /**
   * An attempt's slot is for the network exchange: it is freed once the answer is in, while the
   * outcome waits for the recorder's next batch (its retry is claimable only once recorded).
   * The slots answered in one turn are freed together at its end (by then undici has their
   * connections back in its pool for the next attempts), then the ready deliveries take them,
   * even while the claimer waits for a claim.
   */
  #free(id: string, answer: Answer): void {
    this.#answered.push({ id, answer });
    if (this.#answered.length > 1) return;
    setImmediate(() => {
      const answered = this.#answered;
      this.#answered = [];
      for (const { id, answer } of answered) this.#scheduler.finished(id, answer);
      if (!this.#claimer.running) return;
      this.#launchReady();
      this.#claimer.wake();
    });
  }

  /** One attempt of one held delivery; resolves once its outcome (and log entry) is recorded. */
  async #attempt(held: Held<EndpointsRead>, answered: (run: AttemptRun) => void): Promise<void> {
    const { delivery } = held;
    const endpoint = (held.batch.found ?? (await held.batch.endpoints)).get(delivery.endpoint_id);
    const context = { sender: this.#sender, clock: this.#clock, allowPrivate: this.#allowPrivate };
    const run = await runAttempt(delivery, endpoint, this.#policyOf(delivery.endpoint_id), context);
    answered(run);
    if (run.kind === 'cancelled') {
      this.#relay.settle(delivery.id, new DeliveryNotAttempted('endpoint gone', run.why === 'endpoint deactivated' ? 'the endpoint was deactivated' : 'the endpoint was deleted'));
      return this.#recorder.record(run.outcome, null);
    }
    const { result, entry } = run;
    this.recent.add(Date.now(), result.success);
    if (this.#metrics.enabled) {
      this.#metrics.attempt(result.success, reasonClass(result.status_code, result.reason), result.duration_ms / 1000);
      if (entry.attempt === 1) this.#metrics.deliveryLag((Date.parse(entry.created_at) - Date.parse(delivery.created_at)) / 1000);
    }
    await this.#recorder.record(run.outcome, entry);
    if (run.outcome.state === 'failed') await this.#deliveryFailed(delivery, endpoint!.user_id, entry.reason ?? `HTTP ${result.status_code}`, run.outcome.attempts);
  }

  /**
   * `delivery.failed` for the owner's endpoints that name it, once the last attempt's outcome is
   * recorded (so only the daemon that made it tells). Not for a manual send (its caller has the
   * answer) nor for an operational event's own delivery (no loops). Failing to publish it holds
   * up nothing: it is logged.
   */
  async #deliveryFailed(delivery: DeliveryRecord, ownerId: number, reason: string, attempts: number): Promise<void> {
    if (delivery.manual || isOperational(delivery.event)) return;
    const data = { endpoint_id: delivery.endpoint_id, delivery_id: delivery.id, event: delivery.event, reason: reason.slice(0, FIELD_MAX) || 'unknown', attempts };
    try {
      await this.#events.publish({ event: 'delivery.failed', data, owner_id: ownerId });
    } catch (error) {
      this.#failed(error, { delivery_id: delivery.id }, 'could not publish delivery.failed');
    }
  }

  #tellAttempt(entry: DeliveryLogEntry): void {
    for (const listener of this.#attemptListeners) {
      try {
        listener(entry);
      } catch (error) {
        this.#log?.error({ err: error }, 'attempt listener failed');
      }
    }
  }

  /** Logs a failure: a store that is down once per interval (without a stack), anything else as it comes. */
  #failed(error: unknown, details: object, message: string): void {
    const log = this.#log;
    if (!log) return;
    if (error instanceof StoreUnavailableError) {
      this.#unavailable.note(error, `the store is unavailable: webhook deliveries wait for it (${message})`, (d, m) => (log.warn ?? log.error).call(log, d, m));
    } else log.error({ err: error, ...details }, message);
  }
}
