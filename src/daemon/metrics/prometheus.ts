// The metrics of CONTRACT section 7 with prom-client, in a registry of the daemon's own (not
// prom-client's global one, so two daemons in one process, as tests run them, keep theirs
// apart). Counters and histograms are this daemon's; the queue gauges are read from the store
// at each scrape, so every daemon of a shared database reports the same, shared queue.
// Labels are bounded: route templates, the fixed reason classes, the limit scopes.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EndpointCounts, OutboxStats } from '../../store/store.js';
import { REASON_CLASSES, type DaemonMetrics, type LimitedScope, type ReasonClass } from './metrics.js';

/** What the queue gauges read at a scrape. */
export interface QueueSource {
  stats(): Promise<OutboxStats>;
  endpoints(): Promise<EndpointCounts>;
  /** Epoch ms, for the oldest pending delivery's age. */
  now(): number;
}

/** Every metric name the daemon exposes besides prom-client's defaults (the dashboard test checks against it). */
export const METRIC_NAMES = [
  'panelctl_http_requests_total',
  'panelctl_http_request_duration_seconds',
  'panelctl_webhook_attempts_total',
  'panelctl_webhook_attempt_duration_seconds',
  'panelctl_webhook_delivery_lag_seconds',
  'panelctl_outbox_pending',
  'panelctl_outbox_oldest_pending_age_seconds',
  'panelctl_webhook_endpoints',
  'panelctl_rate_limited_total',
  'panelctl_login_lockouts_total',
  'panelctl_store_commit_duration_seconds',
] as const;

const LINT_REFUSED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** A scrape reads the queue once for its three gauges; reads closer together than this share one. */
const QUEUE_READ_SHARED_MS = 500;
/** Prometheus's default scrape time-out is 10 s; the queue read gives up well before. */
const QUEUE_READ_TIMEOUT_MS = 3_000;

export class PrometheusMetrics implements DaemonMetrics {
  readonly enabled = true;
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #requestSeconds: Histogram<'method' | 'route'>;
  readonly #attempts: Counter<'outcome' | 'reason'>;
  readonly #attemptSeconds: Histogram<'outcome'>;
  readonly #lag: Histogram;
  readonly #limited: Counter<'scope'>;
  readonly #lockouts: Counter;
  readonly #commits: Histogram;
  #queue: QueueSource | null = null;
  #read: { at: number; value: Promise<{ stats: OutboxStats; endpoints: EndpointCounts }> } | null = null;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters, which promtool's lint refuses; the same figures stay, by
    // type, in nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
    for (const name of LINT_REFUSED_DEFAULTS) this.registry.removeSingleMetric(name);
    this.#requests = new Counter({
      name: 'panelctl_http_requests_total',
      help: 'API requests answered, by method, route template and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#requestSeconds = new Histogram({
      name: 'panelctl_http_request_duration_seconds',
      help: 'Time to answer an API request, by method and route template',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#attempts = new Counter({
      name: 'panelctl_webhook_attempts_total',
      help: 'Webhook delivery attempts this daemon made, by outcome (success, failure) and reason class',
      labelNames: ['outcome', 'reason'],
      registers,
    });
    this.#attemptSeconds = new Histogram({
      name: 'panelctl_webhook_attempt_duration_seconds',
      help: 'Duration of a webhook attempt (connect, request, answer), by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#lag = new Histogram({
      name: 'panelctl_webhook_delivery_lag_seconds',
      help: "Time from an event's publish to its delivery's first attempt",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    });
    this.#limited = new Counter({
      name: 'panelctl_rate_limited_total',
      help: 'Requests refused with 429, by scope (login, reset, user: request-rate windows; lockout: a locked-out address)',
      labelNames: ['scope'],
      registers,
    });
    this.#lockouts = new Counter({ name: 'panelctl_login_lockouts_total', help: 'Addresses locked out after too many failed logins or resets', registers });
    this.#commits = new Histogram({
      name: 'panelctl_store_commit_duration_seconds',
      help: 'Time for a store write to become durable (JSON store: the journal fsync; PostgreSQL: transactions and outbox batches)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: 'panelctl_outbox_pending',
      help: 'Deliveries waiting in the outbox (for every daemon of a shared database)',
      registers,
      async collect() {
        const read = await metrics.#readQueue();
        if (read) this.set(read.stats.pending);
      },
    });
    new Gauge({
      name: 'panelctl_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest pending delivery since its event was published; 0 when none is pending',
      registers,
      async collect() {
        const read = await metrics.#readQueue();
        const oldest = read?.stats.oldest_pending_at;
        if (read) this.set(oldest == null ? 0 : Math.max(0, (metrics.#queue!.now() - oldest) / 1000));
      },
    });
    new Gauge({
      name: 'panelctl_webhook_endpoints',
      help: 'Webhook endpoints by state (active, inactive)',
      labelNames: ['state'],
      registers,
      async collect() {
        const read = await metrics.#readQueue();
        if (!read) return;
        this.set({ state: 'active' }, read.endpoints.active);
        this.set({ state: 'inactive' }, read.endpoints.inactive);
      },
    });
    // Every series that can appear, at zero from the start: a rate over a counter that appears
    // with its first increment misses that increment.
    for (const reason of REASON_CLASSES) this.#attempts.inc({ outcome: reason === 'none' ? 'success' : 'failure', reason }, 0);
    for (const scope of ['login', 'reset', 'user', 'lockout'] as const) this.#limited.inc({ scope }, 0);
  }

  /** Where the queue gauges read; until it is set (the store opens after the registry) they report nothing. */
  readQueueFrom(source: QueueSource): void {
    this.#queue = source;
  }

  /** The exposition in Prometheus's text format. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.#requests.inc({ method, route, status });
    this.#requestSeconds.observe({ method, route }, seconds);
  }

  attempt(success: boolean, reason: ReasonClass, seconds: number): void {
    const outcome = success ? 'success' : 'failure';
    this.#attempts.inc({ outcome, reason });
    this.#attemptSeconds.observe({ outcome }, seconds);
  }

  deliveryLag(seconds: number): void {
    this.#lag.observe(Math.max(0, seconds));
  }

  rateLimited(scope: LimitedScope): void {
    this.#limited.inc({ scope });
  }

  lockout(): void {
    this.#lockouts.inc();
  }

  storeCommit(seconds: number): void {
    this.#commits.observe(seconds);
  }

  /**
   * The store's queue figures, read once for the gauges of one scrape. A failed read (the
   * database is down) leaves the gauges out of that scrape rather than failing it: the process
   * and request metrics still tell what is happening.
   */
  async #readQueue(): Promise<{ stats: OutboxStats; endpoints: EndpointCounts } | null> {
    const source = this.#queue;
    if (!source) return null;
    const now = Date.now();
    if (!this.#read || now - this.#read.at > QUEUE_READ_SHARED_MS) {
      // A database that does not answer must not hold the scrape past Prometheus's own time-out.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the store did not answer in time')), QUEUE_READ_TIMEOUT_MS);
      });
      const read = Promise.all([source.stats(), source.endpoints()]).then(([stats, endpoints]) => ({ stats, endpoints }));
      const value = Promise.race([read, late]).finally(() => clearTimeout(timer));
      read.catch(() => undefined);
      value.catch(() => undefined);
      this.#read = { at: now, value };
    }
    return this.#read.value.catch(() => null);
  }
}
