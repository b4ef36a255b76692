// The delivery worker: takes due deliveries from the outbox and attempts them, at most
// `concurrency` at once and `perEndpoint` per endpoint (endpoints take turns, so a slow receiver
// only holds its own slots), records each attempt in the endpoint's log and the outcome in the
// outbox, and schedules the one retry. Pending work stays in the outbox; in memory there is one
// small lane per endpoint with work, not a queue of deliveries.
import type { Store } from '../../store/store.js';
import type { DeliveryLogEntry, DeliveryRecord } from '../../store/types.js';
import type { Clock } from '../services.js';
import type { WebhookSender } from './sender.js';
import { deliveryHeaders } from './headers.js';

export const USER_AGENT = 'Panel-WebPanel-Webhook/1.0';
export const MAX_ATTEMPTS = 2;
export const RETRY_DELAY_MS = 2_000;

export type EntryListener = (entry: DeliveryLogEntry, ownerId: number) => void;

export interface DispatcherOptions {
  store: Store;
  clock: Clock;
  sender: WebhookSender;
  /** Whether private-network targets are allowed now (setting or daemon flag). */
  allowPrivate: () => Promise<boolean>;
  /** Attempts in flight at once, over all endpoints. */
  concurrency?: number;
  /** Attempts in flight at once to one endpoint. */
  perEndpoint?: number;
  retryDelayMs?: number;
  log?: { error(details: object, message: string): void };
}

/** Raised to a caller waiting for an attempt that will not be made (or logged) by this process. */
export class DeliveryNotAttempted extends Error {
  constructor(
    readonly reason: 'stopping' | 'endpoint gone' | 'not logged',
    message: string,
  ) {
    super(message);
  }
}

/** An endpoint with pending work: how many of its attempts are in flight, when to look again. */
interface Lane {
  endpointId: number;
  inFlight: number;
  /** Whether it is in the run queue. */
  queued: boolean;
  timer: NodeJS.Timeout | null;
  wakeAt: number;
}

interface Waiter {
  resolve: (entry: DeliveryLogEntry) => void;
  reject: (error: Error) => void;
}

const RECENT_ENTRIES = 500;

export class Dispatcher {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #sender: WebhookSender;
  readonly #allowPrivate: () => Promise<boolean>;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #retryDelayMs: number;
  readonly #log: DispatcherOptions['log'];

  readonly #lanes = new Map<number, Lane>();
  /** Lanes that may have due work, served in turn (a queue with a moving head). */
  #runQueue: Lane[] = [];
  #runHead = 0;
  #active = 0;
  readonly #inFlight = new Map<string, Promise<void>>();
  #running = false;
  #stopping = false;
  #pumping = false;
  #pumpAgain = false;

  readonly #listeners = new Set<EntryListener>();
  readonly #waiters = new Map<string, Waiter>();
  /** The newest entries, for stream clients that reconnect with Last-Event-ID. */
  #recent: Array<{ entry: DeliveryLogEntry; ownerId: number }> = [];

  constructor(options: DispatcherOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#sender = options.sender;
    this.#allowPrivate = options.allowPrivate;
    this.#concurrency = options.concurrency ?? 64;
    this.#perEndpoint = options.perEndpoint ?? 8;
    this.#retryDelayMs = options.retryDelayMs ?? RETRY_DELAY_MS;
    this.#log = options.log;
  }

  /** Starts with every delivery left pending (first attempts and retries, each when due). */
  async start(): Promise<void> {
    if (this.#running || this.#stopping) return;
    this.#running = true;
    for (const endpointId of await this.#store.outbox.pendingEndpoints()) this.#wake(endpointId);
    void this.#pump();
  }

  /** Told by the event bus once deliveries are durably queued. */
  notify(deliveries: DeliveryRecord[]): void {
    if (!this.#running || this.#stopping) return;
    for (const delivery of deliveries) this.#wake(delivery.endpoint_id);
    void this.#pump();
  }

  /**
   * Stops taking work, lets attempts in flight finish (each is bounded by its time-out) and
   * leaves everything else pending in the outbox for the next start.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const lane of this.#lanes.values()) if (lane.timer) clearTimeout(lane.timer);
    for (const [id, waiter] of this.#waiters) {
      if (this.#inFlight.has(id)) continue;
      this.#waiters.delete(id);
      waiter.reject(new DeliveryNotAttempted('stopping', 'the daemon is stopping; the delivery stays queued and is made after it starts again'));
    }
    await Promise.allSettled([...this.#inFlight.values()]);
    await this.#sender.close();
  }

  /**
   * Resolves with the log entry of a delivery's first attempt. Call it before the delivery is
   * queued (with an id chosen beforehand), so the attempt cannot be missed.
   */
  firstAttempt(deliveryId: string): Promise<DeliveryLogEntry> {
    if (this.#stopping) return Promise.reject(new DeliveryNotAttempted('stopping', 'the daemon is stopping'));
    return new Promise((resolve, reject) => this.#waiters.set(deliveryId, { resolve, reject }));
  }

  /** Stops waiting (the delivery could not be queued). */
  forget(deliveryId: string): void {
    this.#waiters.delete(deliveryId);
  }

  /** Calls `listener` with every new log entry and its endpoint's owner; returns the unsubscribe. */
  onEntry(listener: EntryListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Recent entries newer than `entryId`, oldest first (for a reconnecting stream). */
  entriesSince(entryId: number): Array<{ entry: DeliveryLogEntry; ownerId: number }> {
    return this.#recent.filter((item) => item.entry.id > entryId);
  }

  get inFlightCount(): number {
    return this.#active;
  }

  #wake(endpointId: number): void {
    let lane = this.#lanes.get(endpointId);
    if (!lane) {
      lane = { endpointId, inFlight: 0, queued: false, timer: null, wakeAt: Infinity };
      this.#lanes.set(endpointId, lane);
    }
    this.#enqueue(lane);
  }

  #enqueue(lane: Lane): void {
    if (lane.queued) return;
    lane.queued = true;
    this.#runQueue.push(lane);
  }

  #dequeue(): Lane | undefined {
    if (this.#runHead >= this.#runQueue.length) return undefined;
    const lane = this.#runQueue[this.#runHead++];
    // Drop the consumed head now and then, so the array does not grow for ever.
    if (this.#runHead > 1024 && this.#runHead * 2 > this.#runQueue.length) {
      this.#runQueue = this.#runQueue.slice(this.#runHead);
      this.#runHead = 0;
    }
    lane.queued = false;
    return lane;
  }

  /** Starts attempts while there are free slots and lanes with due work. One pump at a time. */
  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        while (!this.#stopping && this.#active < this.#concurrency) {
          const lane = this.#dequeue();
          if (!lane) break;
          if (lane.inFlight >= this.#perEndpoint) continue; // re-queued when one of its attempts ends
          let claim;
          try {
            claim = await this.#store.outbox.claim(lane.endpointId, this.#clock());
          } catch (error) {
            this.#log?.error({ err: error, endpoint_id: lane.endpointId }, 'could not take a webhook delivery from the outbox');
            this.#sleep(lane, this.#clock() + 1_000);
            continue;
          }
          // Stopped while claiming: the claim lives in memory only, the delivery stays pending.
          if (this.#stopping) break;
          if (!claim.delivery) {
            this.#sleep(lane, claim.next_due_at);
            continue;
          }
          this.#launch(lane, claim.delivery);
          // Back to the end of the queue: endpoints with work take turns.
          if (lane.inFlight < this.#perEndpoint) this.#enqueue(lane);
        }
      } while (this.#pumpAgain && !this.#stopping);
    } finally {
      this.#pumping = false;
    }
  }

  /** Nothing due now: look again at `at`, or forget the lane when it has no work at all. */
  #sleep(lane: Lane, at: number | null): void {
    if (this.#stopping) return;
    if (at === null) {
      if (lane.inFlight === 0 && !lane.queued) {
        if (lane.timer) clearTimeout(lane.timer);
        this.#lanes.delete(lane.endpointId);
      }
      return;
    }
    if (lane.timer && lane.wakeAt <= at) return;
    if (lane.timer) clearTimeout(lane.timer);
    lane.wakeAt = at;
    lane.timer = setTimeout(() => {
      lane.timer = null;
      lane.wakeAt = Infinity;
      this.#enqueue(lane);
      void this.#pump();
    }, Math.max(0, at - this.#clock()));
  }

  #launch(lane: Lane, delivery: DeliveryRecord): void {
    lane.inFlight++;
    this.#active++;
    // The slot is for the network exchange: it is freed as soon as the answer is in, while the
    // outcome is recorded (a retry is offered only once recorded, so it cannot start early).
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      lane.inFlight--;
      this.#active--;
      if (this.#stopping) return;
      this.#enqueue(lane);
      void this.#pump();
    };
    const job = this.#attempt(delivery, release)
      .catch((error) => this.#log?.error({ err: error, delivery_id: delivery.id }, 'webhook attempt failed to be recorded'))
      .finally(() => {
        // Also a turn later (see #attempt): recording can finish before undici has the
        // connection back in its pool, and the next attempt would open another one.
        setImmediate(release);
        this.#inFlight.delete(delivery.id);
        // A retry becomes claimable only now that it is recorded: look at the endpoint again.
        if (this.#stopping) return;
        this.#wake(delivery.endpoint_id);
        void this.#pump();
      });
    this.#inFlight.set(delivery.id, job);
  }

  /** One attempt of one delivery: send, then record the log entry and the outcome together. */
  async #attempt(delivery: DeliveryRecord, release: () => void): Promise<void> {
    const endpoint = await this.#store.webhooks.get(delivery.endpoint_id);
    if (!endpoint || (!endpoint.active && !delivery.manual)) {
      // Deleted, or deactivated after the event was queued: it no longer receives events.
      await this.#store.outbox.updateDelivery({ ...delivery, state: 'cancelled' });
      this.#rejectWaiter(delivery.id, new DeliveryNotAttempted('endpoint gone', endpoint ? 'the endpoint was deactivated' : 'the endpoint was deleted'));
      return;
    }
    const attempt = delivery.attempts + 1;
    // Signed with the secret current at attempt time, so a rotation applies to retries too.
    const headers = deliveryHeaders(endpoint, delivery, this.#clock());
    const createdAt = new Date(this.#clock()).toISOString();
    const result = await this.#sender.send(endpoint.url, headers, delivery.body, await this.#allowPrivate());
    // Freed on the next turn of the event loop, once undici has put the connection back in its
    // pool; freed at once, the next attempt could find it still busy and open another one.
    setImmediate(release);
    const state: DeliveryRecord['state'] = result.success ? 'succeeded' : attempt >= MAX_ATTEMPTS ? 'failed' : 'pending';
    const outcome: DeliveryRecord = {
      ...delivery,
      attempts: attempt,
      state,
      next_attempt_at: state === 'pending' ? this.#clock() + this.#retryDelayMs : delivery.next_attempt_at,
    };
    const [logged, progressed] = await Promise.allSettled([
      this.#store.deliveryLog.append({
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
      }),
      this.#store.outbox.updateDelivery(outcome),
    ]);
    if (progressed.status === 'rejected') {
      this.#log?.error({ err: progressed.reason, delivery_id: delivery.id }, 'could not record webhook delivery progress');
    }
    if (logged.status === 'rejected') {
      this.#rejectWaiter(delivery.id, new DeliveryNotAttempted('not logged', 'the attempt was made but could not be logged'));
      throw logged.reason;
    }
    this.#publish(logged.value, endpoint.user_id);
  }

  #publish(entry: DeliveryLogEntry, ownerId: number): void {
    this.#recent.push({ entry, ownerId });
    if (this.#recent.length > RECENT_ENTRIES * 2) this.#recent = this.#recent.slice(-RECENT_ENTRIES);
    if (entry.attempt === 1) {
      const waiter = this.#waiters.get(entry.delivery_id);
      if (waiter) {
        this.#waiters.delete(entry.delivery_id);
        waiter.resolve(entry);
      }
    }
    for (const listener of this.#listeners) {
      try {
        listener(entry, ownerId);
      } catch (error) {
        this.#log?.error({ err: error }, 'delivery listener failed');
      }
    }
  }

  #rejectWaiter(deliveryId: string, error: DeliveryNotAttempted): void {
    const waiter = this.#waiters.get(deliveryId);
    if (!waiter) return;
    this.#waiters.delete(deliveryId);
    waiter.reject(error);
  }
}

function parsePayload(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}
