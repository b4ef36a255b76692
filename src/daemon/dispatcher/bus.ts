// The event bus: turns a published event into durable deliveries. The event, its payload
// bytes and one delivery per matching endpoint are written to the outbox in one durable
// append before publish() resolves, so an acknowledged event is never lost. Listeners (the
// dispatcher) are told afterwards; they find the work in the outbox even after a crash.
import { randomUUID } from 'node:crypto';
import { subscribes } from '../../shared/events.js';
import type { Store } from '../../store/store.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../../store/types.js';
import type { Clock } from '../services.js';

export interface PublishInput {
  event: string;
  data: Record<string, unknown>;
  /** The customer the event belongs to; null for panel-wide events (admins' endpoints only). */
  owner_id: number | null;
}

export interface PublishResult {
  event_id: string;
  deliveries: number;
}

export type QueuedListener = (deliveries: DeliveryRecord[]) => void;

/** The exact bytes a receiver gets: `{ event, timestamp, data }`. */
export function payloadBody(event: string, timestamp: string, data: Record<string, unknown>): string {
  return JSON.stringify({ event, timestamp, data });
}

export class EventBus {
  readonly #listeners = new Set<QueuedListener>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  onQueued(listener: QueuedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Endpoints that receive an event: active, subscribed, and the owner's or an admin's. */
  async matchingEndpoints(event: string, ownerId: number | null): Promise<WebhookRecord[]> {
    const endpoints = await this.store.webhooks.list((w) => w.active && subscribes(w.events, event));
    const out: WebhookRecord[] = [];
    for (const endpoint of endpoints) {
      if (ownerId !== null && endpoint.user_id === ownerId) out.push(endpoint);
      else if ((await this.store.users.get(endpoint.user_id))?.role === 'admin') out.push(endpoint);
    }
    return out;
  }

  async publish(input: PublishInput): Promise<PublishResult> {
    const endpoints = await this.matchingEndpoints(input.event, input.owner_id);
    return this.#enqueue(input, endpoints);
  }

  /**
   * Sends an event to one endpoint whatever its state or subscription (test, redeliver): a
   * manual delivery. `body` replaces the payload bytes; `deliveryId` lets the caller wait for
   * the attempt before the delivery exists.
   */
  async publishTo(endpoint: WebhookRecord, input: PublishInput, body?: string, deliveryId?: string): Promise<DeliveryRecord> {
    const { deliveries } = await this.#enqueueWith(input, [endpoint], { body, deliveryId });
    return deliveries[0];
  }

  async #enqueue(input: PublishInput, endpoints: WebhookRecord[]): Promise<PublishResult> {
    const { event, deliveries } = await this.#enqueueWith(input, endpoints);
    return { event_id: event.id, deliveries: deliveries.length };
  }

  async #enqueueWith(
    input: PublishInput,
    endpoints: WebhookRecord[],
    manual: { body?: string; deliveryId?: string } | null = null,
  ) {
    const now = this.clock();
    const timestamp = new Date(now).toISOString();
    const event: EventRecord = { id: randomUUID(), event: input.event, owner_id: input.owner_id, data: input.data, timestamp };
    const bytes = manual?.body ?? payloadBody(input.event, timestamp, input.data);
    const deliveries: DeliveryRecord[] = endpoints.map((endpoint) => ({
      id: manual?.deliveryId ?? randomUUID(),
      ...(manual ? { manual: true } : {}),
      endpoint_id: endpoint.id,
      event: input.event,
      body: bytes,
      state: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: timestamp,
    }));
    await this.store.outbox.enqueue(event, deliveries);
    if (deliveries.length) for (const listener of this.#listeners) listener(deliveries);
    return { event, deliveries };
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    events: EventBus;
  }
}
