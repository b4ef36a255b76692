// The dispatcher in-process: a real store (the JSON store in a temporary directory, or a fresh
// PostgreSQL database when PANELCTL_TEST_STORE=postgres), the Dispatcher itself, a fake sender
// that records each request and answers what the test says (or holds it open until told), and a
// clock the test moves. For tests of scheduling, retries, fairness and the log relay, where a
// real process and network are not the point.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Dispatcher, type DispatcherOptions } from '../../src/daemon/dispatcher/dispatcher.js';
import { EventBus } from '../../src/daemon/dispatcher/bus.js';
import type { AttemptResult } from '../../src/daemon/dispatcher/sender.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, WebhookRecord } from '../../src/store/types.js';
import { TEST_STORE } from './daemon.js';
import { createMigratedDatabase, pgAdminUrl } from './postgres-db.js';

/** A request the fake sender received. */
export interface SentRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The harness clock when it was sent. */
  at: number;
  /** The delivery it belongs to (X-Webhook-Delivery). */
  deliveryId: string;
  /** Set while the request is held open: answers it. */
  answer?: (reply?: Reply) => void;
}

/** What the fake receiver answers: a status (0: no answer at all, as a refused connection) and body. */
export interface Reply {
  status?: number;
  body?: string;
}

/** Decides the answer to a request: a reply, or 'hold' to keep it open until the test answers it. */
export type Handler = (request: SentRequest) => Reply | 'hold';

export class FakeSender {
  readonly requests: SentRequest[] = [];
  /** Requests held open now. */
  readonly held = new Set<SentRequest>();
  /** The most requests held open at once, per URL. */
  readonly peakHeld = new Map<string, number>();
  /** The most requests held open at once, over all URLs. */
  peakHeldTotal = 0;
  #handlers = new Map<string, Handler>();
  #default: Handler = () => ({ status: 200, body: 'ok' });

  constructor(private readonly clock: () => number) {}

  /** Answers requests to `url` (every URL when omitted) with `handler`. */
  handle(handler: Handler, url?: string): void {
    if (url === undefined) this.#default = handler;
    else this.#handlers.set(url, handler);
  }

  to(url: string): SentRequest[] {
    return this.requests.filter((r) => r.url === url);
  }

  heldTo(url: string): number {
    let n = 0;
    for (const r of this.held) if (r.url === url) n++;
    return n;
  }

  /** Answers every request held open (to `url`, or all). */
  releaseAll(reply: Reply = { status: 0, body: 'timed out' }, url?: string): void {
    for (const r of [...this.held]) if (url === undefined || r.url === url) r.answer!(reply);
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const request: SentRequest = { url, headers, body, at: this.clock(), deliveryId: headers['X-Webhook-Delivery'] };
    this.requests.push(request);
    const decided = (this.#handlers.get(url) ?? this.#default)(request);
    const reply =
      decided === 'hold'
        ? await new Promise<Reply>((resolve) => {
            request.answer = (r = { status: 200, body: 'ok' }) => {
              this.held.delete(request);
              delete request.answer;
              resolve(r);
            };
            this.held.add(request);
            this.peakHeld.set(url, Math.max(this.peakHeld.get(url) ?? 0, this.heldTo(url)));
            this.peakHeldTotal = Math.max(this.peakHeldTotal, this.held.size);
          })
        : decided;
    const status = reply.status ?? 200;
    const success = status >= 200 && status < 300;
    return {
      status_code: status,
      response: reply.body ?? (status === 0 ? 'connection refused' : 'ok'),
      success,
      duration_ms: 1,
      reason: success ? null : status === 0 ? 'connection refused' : `HTTP ${status}`,
    };
  }

  async close(): Promise<void> {
    this.releaseAll();
  }
}

export interface HarnessOptions extends Partial<Omit<DispatcherOptions, 'store' | 'clock' | 'sender' | 'allowPrivate'>> {
  /** Don't start the dispatcher (start it with `harness.dispatcher.start()`). */
  idle?: boolean;
}

export interface DispatcherHarness {
  store: Store;
  dispatcher: Dispatcher;
  sender: FakeSender;
  events: EventBus;
  /** The harness clock (epoch ms); starts at the real time. */
  now(): number;
  /** Moves the clock forward. */
  advance(ms: number): void;
  /** A user (an owner of endpoints). */
  user(role?: 'customer' | 'admin'): Promise<number>;
  /** An endpoint of `userId` at `url` (default https://receiver.test/<n>), subscribed to every event. */
  endpoint(userId: number, input?: Partial<WebhookRecord>): Promise<WebhookRecord>;
  /** Publishes `event` for `ownerId`; answers how many deliveries were queued. */
  publish(ownerId: number | null, data?: Record<string, unknown>, event?: string): Promise<number>;
  /** The endpoint's log, newest first. */
  log(endpointId: number): Promise<DeliveryLogEntry[]>;
  pending(): Promise<number>;
  close(): Promise<void>;
}

let endpoints = 0;
let users = 0;

/**
 * @example
 * const h = await startDispatcherHarness();
 * const owner = await h.user();
 * const hook = await h.endpoint(owner);
 * await h.publish(owner);
 * await vi.waitFor(() => expect(h.sender.requests).toHaveLength(1));
 * await h.close();
 */
export async function startDispatcherHarness(options: HarnessOptions = {}): Promise<DispatcherHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-dispatcher-'));
  let databaseUrl: string | undefined;
  if (TEST_STORE === 'postgres') {
    const { url, reason } = pgAdminUrl();
    if (!url) throw new Error(`PANELCTL_TEST_STORE=postgres but no PostgreSQL: ${reason}`);
    databaseUrl = await createMigratedDatabase(url, 'panelctl_dispatcher');
  }
  const store = await openStore({ dataDir: dir, databaseUrl, create: true });
  let clock = Date.now();
  const now = () => clock;
  const sender = new FakeSender(now);
  const { idle, ...dispatcherOptions } = options;
  // The loop looks every few ms, so a moved clock is noticed at once (it sleeps by real timers).
  const dispatcher = new Dispatcher({ pollMs: 10, ...dispatcherOptions, store, clock: now, sender, allowPrivate: async () => true });
  if (!idle) dispatcher.start();
  const events = new EventBus(store, now);
  return {
    store,
    dispatcher,
    sender,
    events,
    now,
    advance(ms) {
      clock += ms;
    },
    async user(role = 'customer') {
      return (await insertUser(store, `harness-${process.pid}-${++users}`, role, clock)).id;
    },
    async endpoint(userId, input = {}) {
      const at = new Date(clock).toISOString();
      return store.webhooks.insert({
        user_id: userId,
        url: `https://receiver.test/${++endpoints}`,
        secret: 'test-secret',
        events: '*',
        active: true,
        created_at: at,
        updated_at: at,
        ...input,
      });
    },
    async publish(ownerId, data = { site_id: 1, domain: 'example.org' }, event = 'site.created') {
      return (await events.publish({ event, data, owner_id: ownerId })).deliveries;
    },
    log: (endpointId) => store.deliveryLog.list(endpointId),
    pending: () => store.outbox.pendingCount(),
    async close() {
      sender.releaseAll();
      await dispatcher.stop();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A delivery's requests, in order. */
/** A user straight into `store` (no password that signs in), named after `name`, made at `at` (epoch ms). */
export function insertUser(store: Store, name: string, role: 'admin' | 'customer', at: number) {
  const stamp = new Date(at).toISOString();
  return store.users.insert({
    email: `${name}@example.test`,
    name,
    role,
    password_hash: 'x',
    totp_secret: null,
    totp_pending_secret: null,
    two_factor_enabled: false,
    totp_last_step: null,
    created_at: stamp,
    updated_at: stamp,
  });
}

export function attemptsOf(sender: FakeSender, delivery: Pick<DeliveryRecord, 'id'> | string): SentRequest[] {
  const id = typeof delivery === 'string' ? delivery : delivery.id;
  return sender.requests.filter((r) => r.deliveryId === id);
}
