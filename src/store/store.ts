// The store interface: every persistence call of routes and dispatcher goes through these
// repositories, so a second backend (e.g. PostgreSQL) can be added without touching them.
// Every mutating call resolves only once the change is durable (on disk, fsynced).
import type { Settings, SettingsPatch } from '../shared/settings.js';
import type {
  ApiKeyRecord,
  DeliveryLogEntry,
  DeliveryRecord,
  EventRecord,
  LimiterRecord,
  ResetTokenRecord,
  SiteRecord,
  SubscriptionRecord,
  UserRecord,
  WebhookRecord,
} from './types.js';

export type NewRecord<T extends { id: unknown }> = Omit<T, 'id'>;

/** CRUD over one collection of records with integer ids. */
export interface Repository<T extends { id: number }> {
  get(id: number): Promise<T | undefined>;
  list(filter?: (record: T) => boolean): Promise<T[]>;
  find(filter: (record: T) => boolean): Promise<T | undefined>;
  insert(record: NewRecord<T>): Promise<T>;
  /** Applies a partial change; resolves with the updated record, or undefined when absent. */
  update(id: number, patch: Partial<NewRecord<T>>): Promise<T | undefined>;
  /** Resolves with the removed record, or undefined when absent. */
  remove(id: number): Promise<T | undefined>;
  count(): Promise<number>;
  /**
   * A number that changes whenever a record of the collection is added, changed or removed
   * through the store, so readers can reuse what they built from an unchanged collection.
   */
  revision(): number;
}

export interface UsersRepository extends Repository<UserRecord> {
  byEmail(email: string): Promise<UserRecord | undefined>;
  /** Removes the user with their API keys, webhooks, reset tokens, subscriptions and their sites in one durable write. */
  removeCascade(id: number): Promise<UserRecord | undefined>;
}

export interface SubscriptionsRepository extends Repository<SubscriptionRecord> {
  /**
   * Inserts a subscription. When it is the default, the customer's other subscriptions lose
   * the mark in the same durable write, so a customer never has two defaults (nor, after a
   * failed write, none).
   */
  create(record: NewRecord<SubscriptionRecord>): Promise<SubscriptionRecord>;
}

export interface ApiKeysRepository extends Repository<ApiKeyRecord> {
  /** O(1) lookup by the SHA-256 hash of the presented key. */
  byHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /**
   * Records a use at `atMs` (epoch ms) without a store write per request; uses are flushed in
   * batches. `last_used_at` is kept to the second: a key used many times within one second is
   * recorded once.
   */
  touch(id: number, atMs: number): void;
}

export interface LimiterRepository {
  get(key: string): Promise<LimiterRecord | undefined>;
  /** Stores the counter; `durable` false lets high-rate request windows be flushed in batches. */
  put(record: LimiterRecord, durable?: boolean): Promise<void>;
  delete(key: string): Promise<void>;
  /** Drops records whose window and lock both ended before `now`. */
  prune(now: number, windowMs: number): Promise<void>;
}

export interface SettingsRepository {
  get(): Promise<Settings>;
  /**
   * The settings as last read or written, without waiting: every request consults them (the
   * request limits), so backends keep them in memory and refresh them on update.
   */
  current(): Readonly<Settings>;
  update(patch: SettingsPatch): Promise<Settings>;
}

/**
 * The outbox: events with their deliveries, persisted before any attempt is made.
 * Kept apart from the main store so that recording progress does not rewrite unrelated data.
 */
export interface OutboxRepository {
  /** Persists an event with its deliveries in one durable write. */
  enqueue(event: EventRecord, deliveries: DeliveryRecord[]): Promise<void>;
  /** Records the outcome of an attempt (state, attempts, next attempt time). */
  updateDelivery(delivery: DeliveryRecord): Promise<void>;
  /** Deliveries still pending, e.g. after a restart. */
  pending(): Promise<DeliveryRecord[]>;
  /** Endpoints that have pending deliveries not yet claimed (the dispatcher's work at start). */
  pendingEndpoints(): Promise<number[]>;
  /**
   * Takes an endpoint's next due delivery for an attempt: the oldest due retry, else the oldest
   * new delivery. A claimed delivery is not offered again until updateDelivery records its
   * outcome (a claim is not persisted: after a restart every pending delivery is offered again).
   * When nothing is due, tells when the next one will be (null: nothing pending).
   */
  claim(endpointId: number, now: number): Promise<OutboxClaim>;
}

export type OutboxClaim = { delivery: DeliveryRecord } | { delivery: null; next_due_at: number | null };

/** Per-endpoint delivery logs: the last 100 attempts, newest first. */
export interface DeliveryLogRepository {
  append(entry: Omit<DeliveryLogEntry, 'id'>): Promise<DeliveryLogEntry>;
  list(endpointId: number, limit?: number): Promise<DeliveryLogEntry[]>;
  get(endpointId: number, entryId: number): Promise<DeliveryLogEntry | undefined>;
  removeEndpoint(endpointId: number): Promise<void>;
}

export interface Store {
  readonly users: UsersRepository;
  readonly apiKeys: ApiKeysRepository;
  readonly subscriptions: SubscriptionsRepository;
  readonly sites: Repository<SiteRecord>;
  readonly webhooks: Repository<WebhookRecord>;
  readonly resetTokens: Repository<ResetTokenRecord>;
  readonly limiter: LimiterRepository;
  readonly settings: SettingsRepository;
  readonly outbox: OutboxRepository;
  readonly deliveryLog: DeliveryLogRepository;
  /** Writes anything still buffered (coalesced uses, limiter windows) and waits for it. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Raised when the store cannot be read; the daemon stops with its message. */
export class StoreCorruptError extends Error {
  constructor(readonly file: string, reason: string) {
    super(`store file ${file} cannot be read: ${reason}. It was left untouched; restore it from a backup or move it away.`);
    this.name = 'StoreCorruptError';
  }
}

/** Raised when a change could not be made durable; the change is rolled back in memory. */
export class StoreWriteError extends Error {
  constructor(readonly file: string, cause: unknown) {
    super(`could not write ${file}: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'StoreWriteError';
  }
}
