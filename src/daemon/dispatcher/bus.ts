// The event bus: turns a published event into durable deliveries. The event, its payload
// bytes and one delivery per matching endpoint go into the outbox before publish() resolves,
// so an acknowledged event is never lost. Given a transaction, it enqueues through it: the
// change that emits the event and the event commit together, or neither does. Dispatchers (of
// this daemon or another sharing the store) learn of the work from the store's change feed.
import { randomUUID } from 'node:crypto';
import { payloadBody } from '../../shared/events.js';
import type { RecordEvent, Repositories, Store } from '../../store/store.js';
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

/** A manual send: the payload bytes to send again (redeliver) and the delivery id chosen beforehand. */
export interface ManualSend {
  body?: string;
  deliveryId?: string;
}

export { payloadBody };

export class EventBus {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * Queues `input` for every endpoint that receives it (active, subscribed, the owner's or an
   * admin's), through `tx` when given.
   * @example
   * await store.transaction(async (tx) => {
   *   const site = await tx.sites.insert(record);
   *   await app.events.publish({ event: 'site.created', data: { site_id: site.id, domain: site.domain }, owner_id }, tx);
   * });
   */
  async publish(input: PublishInput, tx?: Repositories): Promise<PublishResult> {
    // The store matches the endpoints and queues the deliveries in one step (one statement on
    // PostgreSQL): this is on the path of every published event.
    const { event, bytes, now } = this.#event(input);
    const queued = await (tx ?? this.store).outbox.publish(event, { body: bytes, next_attempt_at: now, created_at: event.timestamp });
    return { event_id: event.id, deliveries: queued.length };
  }

  /**
   * The event a store write publishes about its record, stamped now: its data is the record's
   * id under `idKey`, then `data`, then the record's `fields`. The store publishes it in the
   * write's own step, so the record, the event and its deliveries commit together.
   * @example
   * const site = await app.store.sites.create(site, app.events.created('site.created', 'site_id', { domain }));
   * await app.store.sites.delete(id, customerId, app.events.created('site.deleted', 'site_id', {}, ['domain']));
   */
  created(event: string, idKey: string, data: Record<string, unknown>, fields: readonly string[] = []): RecordEvent {
    const now = this.clock();
    return { id: randomUUID(), event, timestamp: new Date(now).toISOString(), next_attempt_at: now, idKey, data, fields };
  }

  /**
   * Sends an event to one endpoint whatever its state or subscription (test, redeliver): a
   * manual delivery. `manual.body` replaces the payload bytes; `manual.deliveryId` lets the
   * caller wait for the attempt before the delivery exists.
   */
  async publishTo(endpoint: WebhookRecord, input: PublishInput, manual: ManualSend = {}, tx?: Repositories): Promise<DeliveryRecord> {
    const { event, bytes, now } = this.#event(input, manual.body);
    const delivery: DeliveryRecord = {
      id: manual.deliveryId ?? randomUUID(),
      manual: true,
      endpoint_id: endpoint.id,
      // The endpoint's owner, so dispatchers share their slots fairly between customers.
      owner_id: endpoint.user_id,
      event: input.event,
      body: bytes,
      state: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: event.timestamp,
    };
    await (tx ?? this.store).outbox.enqueue(event, [delivery]);
    return delivery;
  }

  /** The event record stamped now, with the bytes its deliveries carry (`body` when given). */
  #event(input: PublishInput, body?: string) {
    const now = this.clock();
    const timestamp = new Date(now).toISOString();
    const event: EventRecord = { id: randomUUID(), event: input.event, owner_id: input.owner_id, data: input.data, timestamp };
    return { event, bytes: body ?? payloadBody(input.event, timestamp, input.data), now };
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    events: EventBus;
  }
}
