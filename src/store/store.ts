// The store contract: what every backend (the embedded JSON store, PostgreSQL) promises to the
// routes and the dispatcher. It speaks the language of a database: named queries instead of
// closures, transactions, constraints kept by the store, leased claims of outbox work, and a
// change feed. Nothing here may assume that one process sees every write.
//
// Every method is async. A mutating call outside a transaction is its own transaction. Every
// mutating call (and every transaction) resolves only once its change is durable: it survives a
// crash of the daemon or of the machine. The exceptions say so where they are declared, with what
// a caller then sees: an API key's use (`apiKeys.touch`, until `flush`), the limiter's soft hits
// and prunes, a final outcome (`outbox.settle`, `outbox.record`) and delivery log entries. They
// are what every request or every attempt writes; a crash may lose the newest of them, and what
// it loses is either worth nothing after it or made good by an attempt made again
// (at-least-once delivery: receivers deduplicate by X-Webhook-Delivery).
import { payloadBody } from '../shared/events.js';
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

export interface UsersRepository {
  get(id: number): Promise<UserRecord | undefined>;
  /** Case-insensitive. */
  byEmail(email: string): Promise<UserRecord | undefined>;
  /** Every user, by id. */
  list(): Promise<UserRecord[]>;
  count(): Promise<number>;
  /** Conflict `users.email` when another user has the email (case-insensitive). */
  insert(record: NewRecord<UserRecord>): Promise<UserRecord>;
  /** Resolves with the updated record, or undefined when absent. Conflict `users.email` as for insert. */
  update(id: number, patch: Partial<NewRecord<UserRecord>>): Promise<UserRecord | undefined>;
  /**
   * Removes the user with everything they own: API keys, webhook endpoints (with their pending
   * deliveries and logs), reset tokens, subscriptions and their sites.
   */
  remove(id: number): Promise<UserRecord | undefined>;
}

export interface ApiKeysRepository {
  get(id: number): Promise<ApiKeyRecord | undefined>;
  /** By the SHA-256 hash (hex) of the presented key. */
  byHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /**
   * The key with the user it belongs to, in one lookup: an API request's caller is known from
   * one round trip. Undefined when there is no such key (or its user is gone).
   */
  callerByHash(keyHash: string): Promise<{ key: ApiKeyRecord; user: UserRecord } | undefined>;
  /** A user's keys, by id. */
  listByUser(userId: number): Promise<ApiKeyRecord[]>;
  insert(record: NewRecord<ApiKeyRecord>): Promise<ApiKeyRecord>;
  remove(id: number): Promise<ApiKeyRecord | undefined>;
  /**
   * Records a use at `atMs` (epoch ms). `last_used_at` is kept to the second and may be written
   * in batches (a use is not worth a durable write per request); `flush()` writes what is held.
   */
  touch(id: number, atMs: number): Promise<void>;
}

export interface SubscriptionsRepository {
  get(id: number): Promise<SubscriptionRecord | undefined>;
  /** Every subscription, by id. */
  list(): Promise<SubscriptionRecord[]>;
  /** A customer's subscriptions, by id. */
  listByCustomer(customerId: number): Promise<SubscriptionRecord[]>;
  /** The customer's default subscription: the one marked default, else the oldest. */
  defaultFor(customerId: number): Promise<SubscriptionRecord | undefined>;
  /**
   * Conflicts: `subscriptions.main_domain` (another subscription has it), `domains.owner`
   * (another customer has a site with that domain), `users.customer` (the customer does not
   * exist or is not a customer). When the new one is the default (or the customer's first), the
   * customer's other subscriptions lose the mark in the same transaction.
   */
  insert(record: NewRecord<SubscriptionRecord>): Promise<SubscriptionRecord>;
  /**
   * `insert` and the subscription's event (`event`, owned by the customer) in one step: both
   * commit, or neither does. One round trip on PostgreSQL outside a transaction. Conflicts as
   * for insert.
   */
  create(record: NewRecord<SubscriptionRecord>, event: RecordEvent): Promise<SubscriptionRecord>;
  update(id: number, patch: Partial<Pick<SubscriptionRecord, 'status' | 'updated_at'>>): Promise<SubscriptionRecord | undefined>;
  /**
   * Gives the subscription `status` with its event (`event`, owned by the customer) in one step,
   * as `update` with the event published: both commit, or neither does (one round trip on
   * PostgreSQL outside a transaction). Conflicts: `subscriptions.missing`, `subscriptions.status`
   * (it has that status already, however many ask at once: nothing is changed or published).
   */
  setStatus(id: number, status: SubscriptionRecord['status'], updatedAt: string, event: RecordEvent): Promise<SubscriptionRecord>;
  /** Removes the subscription with its sites. */
  remove(id: number): Promise<SubscriptionRecord | undefined>;
}

export interface SitesRepository {
  get(id: number): Promise<SiteRecord | undefined>;
  /** Every site, by id. */
  list(): Promise<SiteRecord[]>;
  /** A subscription's sites, by id. */
  listBySubscription(subscriptionId: number): Promise<SiteRecord[]>;
  count(): Promise<number>;
  /**
   * Conflicts: `sites.domain` (another site has it), `domains.owner` (it is the main domain of
   * another customer's subscription), `subscriptions.missing` (the subscription does not exist).
   */
  insert(record: NewRecord<SiteRecord>): Promise<SiteRecord>;
  /**
   * A site made the way `POST /sites` makes it, with its event (`event`, owned by the
   * subscription's customer), in one step: the subscription chosen and checked, the site
   * inserted under the domain rule and the event published commit together, or nothing does.
   * One round trip on PostgreSQL outside a transaction (a write a route hands over whole, so it
   * costs no BEGIN, reads or COMMIT of its own). Conflicts: those of `insert`, and
   * `subscriptions.forbidden` (the named subscription is another customer's),
   * `subscriptions.none` (no subscription named and the customer has none),
   * `subscriptions.inactive` (the subscription is not active; the message says which and why).
   */
  create(site: NewSite, event: RecordEvent): Promise<SiteRecord>;
  remove(id: number): Promise<SiteRecord | undefined>;
  /**
   * `remove` as `DELETE /sites/:id` makes it, with its event (`event`, owned by the site's
   * customer), in one step: both commit, or neither does (one round trip on PostgreSQL outside a
   * transaction). Answers the removed site. Conflicts: `sites.missing` (no such site, or removed
   * meanwhile), `sites.forbidden` (the site of another customer than `customerId`; null: an
   * admin, who may remove any).
   */
  delete(id: number, customerId: number | null, event: RecordEvent): Promise<SiteRecord>;
}

/** A site for `SitesRepository.create`. */
export interface NewSite {
  /** The subscription to create it in; absent: the customer's default (see `defaultFor`). */
  subscription_id?: number;
  /**
   * The customer it is made for: only their own subscription is taken, and theirs is the
   * default. Null: an admin, who may name any subscription (and must name one).
   */
  customer_id: number | null;
  domain: string;
  created_at: string;
}

/**
 * The event a write publishes about the record it creates, changes or removes, stamped by the
 * caller, in the write's own step. Its data is the record's id under `idKey`, then the fields of
 * `data`, then the record's own `fields` (as written or removed, under their names); its
 * deliveries carry `payloadBody` of them, as `outbox.publish` would queue them.
 */
export interface RecordEvent {
  id: string;
  event: string;
  timestamp: string;
  /** When the deliveries fall due (epoch ms). */
  next_attempt_at: number;
  idKey: string;
  data: Record<string, unknown>;
  /** Fields of the record (string-valued) that go into the data after `data`'s. */
  fields?: readonly string[];
}

/** The event record and delivery template of `event` about `record` (owned by `ownerId`). */
export function recordEventOf(
  event: RecordEvent,
  ownerId: number | null,
  record: { id: number },
): { record: EventRecord; template: DeliveryTemplate } {
  const data: Record<string, unknown> = { [event.idKey]: record.id, ...withoutKey(event.data, event.idKey) };
  for (const field of event.fields ?? []) data[field] = (record as unknown as Record<string, unknown>)[field];
  return {
    record: { id: event.id, event: event.event, owner_id: ownerId, data, timestamp: event.timestamp },
    template: { body: payloadBody(event.event, event.timestamp, data), next_attempt_at: event.next_attempt_at, created_at: event.timestamp },
  };
}

/**
 * `recordEventOf`'s payload bytes split around what a backend learns only where it writes
 * (PostgreSQL): `head + id + tail`, with `,"field":<field as JSON>` for each of `fields` before
 * the tail, is the body `recordEventOf` makes (`fields` must not repeat a key of `data`).
 */
export function recordEventBodyParts(event: RecordEvent): { head: string; tail: string } {
  const rest = JSON.stringify(withoutKey(event.data, event.idKey));
  const head = `{"event":${JSON.stringify(event.event)},"timestamp":${JSON.stringify(event.timestamp)},"data":{${JSON.stringify(event.idKey)}:`;
  return { head, tail: `${rest === '{}' ? '' : `,${rest.slice(1, -1)}`}` };
}

function withoutKey(data: Record<string, unknown>, key: string): Record<string, unknown> {
  if (!Object.hasOwn(data, key)) return data;
  const { [key]: _dropped, ...rest } = data;
  return rest;
}

/** A stretch of a list in id order: the records past `after`, at most `limit` of them (default: all). */
export interface IdRange {
  after?: number;
  limit?: number;
}

export interface WebhooksRepository {
  get(id: number): Promise<WebhookRecord | undefined>;
  /**
   * The endpoint with its delivery log's revision (`DeliveryLogRepository.revision`), read
   * together: what a request for the log needs first (one statement on PostgreSQL).
   */
  getWithLogRevision(id: number): Promise<{ endpoint: WebhookRecord; logRevision: string } | undefined>;
  /** The endpoints among `ids` that exist, by id (a dispatcher reads a claimed batch's in one go). */
  getMany(ids: number[]): Promise<WebhookRecord[]>;
  /** Every endpoint (within `range`), by id. */
  list(range?: IdRange): Promise<WebhookRecord[]>;
  /** A user's endpoints (within `range`), by id: a page of a large tenant's list reads that page. */
  listByUser(userId: number, range?: IdRange): Promise<WebhookRecord[]>;
  /**
   * The endpoints that receive `event` owned by `ownerId`: active, subscribed to it (by name or
   * `*`), and the owner's or an admin's. `ownerId` null: admins' endpoints only. By id.
   */
  subscribedTo(event: string, ownerId: number | null): Promise<WebhookRecord[]>;
  count(): Promise<number>;
  /** How many endpoints are active and inactive (the metrics' endpoint gauge). */
  countByState(): Promise<EndpointCounts>;
  insert(record: NewRecord<WebhookRecord>): Promise<WebhookRecord>;
  update(id: number, patch: Partial<NewRecord<WebhookRecord>>): Promise<WebhookRecord | undefined>;
  /** Removes the endpoint with its pending deliveries and its delivery log. */
  remove(id: number): Promise<WebhookRecord | undefined>;
  /** Drops every previous secret (a rotation's overlap) that expired at or before `now` (ISO); answers how many. */
  forgetExpiredSecrets(now: string): Promise<number>;
}

export interface ResetTokensRepository {
  byHash(tokenHash: string): Promise<ResetTokenRecord | undefined>;
  insert(record: NewRecord<ResetTokenRecord>): Promise<ResetTokenRecord>;
  /** Marks the token used; false when it was already used (a token is spent once, even under races). */
  markUsed(id: number, at: string): Promise<boolean>;
  /** Removes a user's tokens, and everyone's that expired before `now` (epoch ms). */
  removeForUser(userId: number, now: number): Promise<void>;
}

/** Revoked JWTs (logout), by `jti`, kept until the token would have expired anyway. */
export interface RevokedTokensRepository {
  revoke(jti: string, expiresAt: number): Promise<void>;
  isRevoked(jti: string): Promise<boolean>;
  /** Drops revocations of tokens that have expired by `now` (epoch ms). */
  prune(now: number): Promise<void>;
}

/** Counters of the request limits and the login lockout, shared by every daemon of a store. */
export interface LimiterRepository {
  /**
   * A lockout counter's hit: atomically counts one hit of `key` in a fixed window of `windowMs`
   * and answers the new state, once durable (a counted failure survives a crash). A window that
   * has ended (or a lock that has ended) starts a new one with count 1.
   */
  hit(key: string, windowMs: number, now: number): Promise<LimiterRecord>;
  /**
   * A request window's hit: counted as `hit` counts, atomically and in the one window every
   * daemon of the store shares, and answered with the count right after it. Written lazily: it
   * may resolve before the count is durable, and a crash forgets at most about a second of
   * counts (a client gets that many requests back). `flush()` writes what is held.
   */
  countRequest(key: string, windowMs: number, now: number): Promise<LimiterRecord>;
  /** Takes back one hit (an attempt that turned out not to count, such as a good login). */
  release(key: string): Promise<void>;
  /** Locks `key` until `until` (epoch ms); keeps a later lock. */
  lock(key: string, until: number): Promise<LimiterRecord>;
  get(key: string): Promise<LimiterRecord | undefined>;
  /** Drops records whose window (`windowMs` long) and lock both ended before `now`. */
  prune(now: number, windowMs: number): Promise<void>;
  /** Forgets `key`'s count and lock (an unlock, a good second factor); false when there was none. */
  remove(key: string): Promise<boolean>;
  /** Forgets every key that starts with `prefix` (an unlock of every address); answers how many. */
  removePrefix(prefix: string): Promise<number>;
}

export interface SettingsRepository {
  get(): Promise<Settings>;
  update(patch: SettingsPatch): Promise<Settings>;
}

/** The outcome of one attempt, recorded by the claimer that holds the delivery's lease. */
export interface DeliveryOutcome {
  id: string;
  state: DeliveryRecord['state'];
  attempts: number;
  next_attempt_at: number;
}

export interface ClaimOptions {
  /** Who claims (a daemon's id); outcomes are accepted from the lease holder only. */
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries. */
  limit: number;
  /** At most this many deliveries of one endpoint in this claim (the claim is spread over endpoints). */
  perEndpoint: number;
  /** Fairness: endpoints the claimer has no room for now (their deliveries stay for later or another claimer). */
  skipEndpoints?: readonly number[];
  /** Fairness: endpoint owners the claimer has no room for now. */
  skipOwners?: readonly number[];
  /** Only these deliveries (a manual send the claimer wants to make at once); the skips do not apply. */
  ids?: readonly string[];
}

/** What every delivery of a published event shares. */
export interface DeliveryTemplate {
  /** The payload bytes a receiver gets. */
  body: string;
  next_attempt_at: number;
  created_at: string;
}

/** The pending delivery `publish` makes of `template` for one endpoint (owned by `ownerId`). */
export function deliveryFromTemplate(id: string, endpointId: number, ownerId: number, event: string, template: DeliveryTemplate): DeliveryRecord {
  return {
    id,
    endpoint_id: endpointId,
    owner_id: ownerId,
    event,
    body: template.body,
    state: 'pending',
    attempts: 0,
    next_attempt_at: template.next_attempt_at,
    created_at: template.created_at,
  };
}

/** A delivery queued by `outbox.publish`. */
export interface QueuedDelivery {
  id: string;
  endpoint_id: number;
}

/**
 * The outbox: events with their deliveries, persisted before any attempt is made. Several
 * dispatchers may share it: a delivery is claimed under a lease, and a claimer that dies loses
 * its leases when they end, so another claims the deliveries again.
 */
export interface OutboxRepository {
  /** Persists an event with its deliveries (in the caller's transaction, if any). */
  enqueue(event: EventRecord, deliveries: DeliveryRecord[]): Promise<void>;
  /**
   * Persists `event` with one pending delivery per endpoint that receives it, in one step (in
   * the caller's transaction, if any): the endpoints `webhooks.subscribedTo(event.event,
   * event.owner_id)` answers, each delivery made from `template` with a new id, the endpoint's
   * owner as `owner_id` and no attempts. Answers the queued deliveries by endpoint id.
   */
  publish(event: EventRecord, template: DeliveryTemplate): Promise<QueuedDelivery[]>;
  /**
   * Due pending deliveries (`next_attempt_at <= now`) that nobody holds a live lease on, in due
   * order (`next_attempt_at`, then creation), at most `perEndpoint` of each endpoint, none of
   * `skipEndpoints` or `skipOwners`, leased to `owner` until `now + leaseMs`. Two claimers never
   * receive the same delivery while its lease lives. A delivery is claimable only once the write
   * that queued it is durable. On a store shared by daemons, an endpoint is served by one
   * claimer at a time, so its `max_in_flight` (default 8) holds over all of them: the claimer
   * that leased from it holds it until those leases end or it `leave`s, and others get none of
   * its deliveries meanwhile.
   */
  claim(options: ClaimOptions): Promise<DeliveryRecord[]>;
  /**
   * Records outcomes of attempts made under `owner`'s leases and releases them. An outcome whose
   * lease is no longer `owner`'s (it ended and another claimer took the delivery) is ignored.
   * Answers the ids that were recorded. A retry (`pending`: attempts, when due) is durable once
   * this resolves. A final outcome may be lost in a crash: the delivery is then pending as it was
   * claimed, and is attempted again once the lease ends (at-least-once).
   */
  settle(owner: string, outcomes: DeliveryOutcome[]): Promise<string[]>;
  /**
   * A dispatcher's batch in one call: appends the attempts' log entries (as `deliveryLog.append`,
   * whether or not `owner` still holds the leases) and then settles their outcomes (as `settle`).
   * Answers the appended entries with their ids. Not atomic: when it rejects, or the daemon
   * crashes before it resolves, the entries may be kept without the outcomes, so a delivery is
   * attempted again once its lease ends and its log shows both attempts. A backend
   * may prune older log entries a little later than `append` does (the log still serves the last
   * LOG_RETENTION of each endpoint).
   */
  record(owner: string, outcomes: DeliveryOutcome[], entries: Omit<DeliveryLogEntry, 'id'>[]): Promise<DeliveryLogEntry[]>;
  /** Releases `owner`'s leases without recording anything (a dispatcher that stops). */
  release(owner: string, ids: readonly string[]): Promise<void>;
  /**
   * `owner` stops claiming, its attempts recorded: what it holds beyond its leases (on a shared
   * store, the endpoints it serves alone for their cap) is free for other claimers at once,
   * instead of when its hold would have ended.
   */
  leave(owner: string): Promise<void>;
  /**
   * `owner`'s process has ended without leaving (it was killed, or its host went down): every
   * lease and hold of `owner`'s ends now, so its deliveries can be claimed at once instead of
   * when their leases would have ended. An attempt it had in flight may then be made again
   * (at-least-once). Only for an owner known to be gone: a daemon restarted on the data
   * directory of the one that crashed.
   */
  abandon(owner: string): Promise<void>;
  /**
   * When the next pending delivery falls due (epoch ms), or no later than that: a backend may
   * answer when it can next be claimed (its lease's end, if later); null: none pending.
   * Paused endpoints' deliveries are not counted: they are not claimed until resumed.
   */
  nextDueAt(): Promise<number | null>;
  /**
   * When each endpoint's earliest pending retry (a delivery attempted before) is due (epoch ms),
   * by endpoint id; endpoints without one are absent. For the endpoint's health.
   */
  nextRetryAt(endpointIds: readonly number[]): Promise<Map<number, number>>;
  pendingCount(): Promise<number>;
  /** Pending deliveries of each of the endpoints (those with none are absent): what a paused endpoint keeps. */
  pendingByEndpoint(endpointIds: readonly number[]): Promise<Map<number, number>>;
  /**
   * The queue at a glance, in one read: pending deliveries (every daemon's, on a shared
   * database) and when the oldest of them was published. Read at each metrics scrape and by
   * the status command, so it must stay cheap however large the backlog.
   */
  stats(): Promise<OutboxStats>;
  get(id: string): Promise<DeliveryRecord | undefined>;
}

/** See OutboxRepository.stats. */
export interface OutboxStats {
  pending: number;
  /** `created_at` of the oldest pending delivery (epoch ms); null when none is pending. */
  oldest_pending_at: number | null;
}

/** See WebhooksRepository.countByState. */
export interface EndpointCounts {
  active: number;
  inactive: number;
}

export interface DeliveryLogQuery {
  /** At most this many (and never more than the retention), newest first. */
  limit?: number;
  failed?: boolean;
  event?: string;
  /** Entries created at or after this time (epoch ms). */
  since?: number;
}

/** A failed attempt as an endpoint's health reads it. */
export type HealthAttempt = Pick<DeliveryLogEntry, 'delivery_id' | 'attempt' | 'created_at'>;

/**
 * What an endpoint's health is read from: its log's last 100 attempts, summarised by the store
 * as attempts are recorded, so a list of endpoints does not read their logs.
 */
export interface LogHealth {
  /** Attempts in the log (at most 100). */
  attempts: number;
  successes: number;
  /** The newest successful attempt's time. */
  last_success_at: string | null;
  /** The newest failed attempt, with what tells why it failed. */
  last_failure: Pick<DeliveryLogEntry, 'success' | 'created_at' | 'reason' | 'status_code' | 'response'> | null;
  /** The failed attempts newer than the newest successful one (all of them without one), newest first. */
  failures: HealthAttempt[];
}

/** Delivery logs: the last LOG_RETENTION (100) attempts of each endpoint, newest first. */
export interface DeliveryLogRepository {
  /**
   * The health summary of each endpoint among `endpointIds` (by id; an endpoint without attempts
   * has a summary with none). Null for an endpoint whose log does not fit the summary (a
   * delivery's newest attempt that is not its last, or a success followed by another attempt of
   * the same delivery): its health is then read from `list`.
   */
  health(endpointIds: readonly number[]): Promise<Map<number, LogHealth | null>>;
  /**
   * A value that changes whenever the endpoint's last 100 entries change, cheaper to read than
   * they are: an answer built from `list` after reading it may be reused while it is unchanged.
   */
  revision(endpointId: number): Promise<string>;
  /**
   * Assigns each entry its id: increasing integers, short enough to type. The log tells what was
   * attempted; the outbox, not the log, is what deliveries are made from. So the newest entries
   * may be lost in a crash, but an id once answered is never given to another entry, even after
   * one.
   */
  append(entries: Omit<DeliveryLogEntry, 'id'>[]): Promise<DeliveryLogEntry[]>;
  list(endpointId: number, query?: DeliveryLogQuery): Promise<DeliveryLogEntry[]>;
  get(endpointId: number, entryId: number): Promise<DeliveryLogEntry | undefined>;
  /** The entries among `ids` that are still kept, oldest first. */
  getMany(ids: readonly number[]): Promise<DeliveryLogEntry[]>;
  /** Entries newer than `entryId` of every endpoint, oldest first, at most `limit` (a reconnecting stream). */
  since(entryId: number, limit: number): Promise<DeliveryLogEntry[]>;
}

/** What changed, published after the change is durable (and, in a transaction, committed). */
export type Change =
  /** `revoked_tokens`: a JWT was logged out (such a record has no numeric id: `id` is null). */
  | { kind: 'record'; collection: 'users' | 'api_keys' | 'subscriptions' | 'sites' | 'webhooks' | 'settings' | 'revoked_tokens'; id: number | null }
  /** Deliveries were queued or fell due: dispatchers look for work. */
  | { kind: 'outbox' }
  /**
   * Attempts were logged (by any daemon of the store), announced by id only: whoever needs the
   * entries reads them with `deliveryLog.getMany`, so daemons nobody is watching read nothing.
   */
  | { kind: 'logged'; ids: number[] };

export interface ChangeFeed {
  /**
   * A listener may be called during the write that made the change or a moment after it
   * resolves (another daemon's changes on a shared database): a cache kept from the feed serves
   * only after `caughtUp()`.
   */
  subscribe(listener: (change: Change) => void): () => void;
  /**
   * Whether every change of the cached collections (users, API keys, revoked tokens,
   * subscriptions, sites) made through a store and resolved before the call, by any handle of
   * the store (a daemon, or a `panelctl` command that opens it), has been published to the
   * listeners. So a change made through panelctl is seen by the next request to any daemon once
   * the write's answer has arrived. A change written straight into a shared database's tables
   * (no panelctl writer) is published once its notice arrives, a moment after its commit, not
   * promised before the next call. `true` at once when every change is published before its write
   * resolves: the embedded store, and a shared database's feed whose write fence holds (its
   * writers wait, before resolving, for every such feed to publish their change). Otherwise the
   * feed asks the database which of them changed since it last asked, publishes those (as
   * `record` changes with `id` null) and answers true; several calls share one question, never
   * one asked before they were made. False when it cannot ask (disconnected): a cache kept from
   * the feed must then not be served.
   * @example
   * if ((await store.changes.caughtUp()) && memo.has(view)) return memo.get(view);
   */
  caughtUp(): true | Promise<boolean>;
}

/** The repositories, as used inside a transaction or on their own. */
export interface Repositories {
  readonly users: UsersRepository;
  readonly apiKeys: ApiKeysRepository;
  readonly subscriptions: SubscriptionsRepository;
  readonly sites: SitesRepository;
  readonly webhooks: WebhooksRepository;
  readonly resetTokens: ResetTokensRepository;
  readonly revokedTokens: RevokedTokensRepository;
  readonly limiter: LimiterRepository;
  readonly settings: SettingsRepository;
  readonly outbox: OutboxRepository;
  readonly deliveryLog: DeliveryLogRepository;
}

/**
 * Every repository of `Repositories`, by name: the one list a backend derives its own from.
 * A name missing here, or one too many, fails to compile (see `RepositoryName`).
 */
export const REPOSITORY_NAMES = [
  'users',
  'apiKeys',
  'subscriptions',
  'sites',
  'webhooks',
  'resetTokens',
  'revokedTokens',
  'limiter',
  'settings',
  'outbox',
  'deliveryLog',
] as const satisfies ReadonlyArray<keyof Repositories>;

/** The name of a repository; `never` unless REPOSITORY_NAMES lists every one of `Repositories`. */
export type RepositoryName = Exclude<keyof Repositories, (typeof REPOSITORY_NAMES)[number]> extends never ? keyof Repositories : never;

/**
 * The repositories of `from`, one per name of REPOSITORY_NAMES: what a store hands out of the
 * set it built.
 * @example
 * Object.assign(this, repositoriesOf(new JsonRepositories(state, run, log, hooks)));
 */
export function repositoriesOf(from: Repositories): Repositories {
  const picked: Partial<Record<RepositoryName, unknown>> = {};
  for (const name of REPOSITORY_NAMES) picked[name] = from[name];
  return picked as Repositories;
}

export interface StoreInfo {
  kind: 'json' | 'postgres';
  /** Where the data is, without credentials: a file path or `host:port/database`. */
  location: string;
}

export interface Store extends Repositories {
  readonly info: StoreInfo;
  readonly changes: ChangeFeed;
  /**
   * Tells `observer` how long each write took to become durable, in seconds (the metrics'
   * commit histogram): the JSON store its journal writes, PostgreSQL its transactions and the
   * outbox's batched writes. Null (the default) stops it; then nothing is timed.
   */
  observeCommits(observer: ((seconds: number) => void) | null): void;
  /**
   * Why the store cannot serve now, or null when it can (readiness): PostgreSQL reads through
   * its pool (a connection and the schema); the JSON store answers whether its last journal
   * write failed with none succeeding since (then it tries one, so it recovers without traffic).
   */
  ready(): Promise<string | null>;
  /**
   * Runs `fn` in a transaction: everything it does through `tx` commits together, durably,
   * when it resolves, or not at all when it throws (the error is rethrown). Use only `tx`
   * inside: the store's own repositories run outside the transaction.
   * @example
   * const site = await store.transaction(async (tx) => {
   *   const site = await tx.sites.insert({ subscription_id: 1, domain: 'a.example', created_at });
   *   await tx.outbox.enqueue(event, deliveries);
   *   return site;
   * });
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
  /**
   * A secret every daemon of the store shares (the JWT signing key), made with `make` on first
   * use. Null when the backend keeps none: the JSON store's daemon reads `jwt-secret` in its
   * data directory instead.
   */
  sharedSecret(name: string, make: () => string): Promise<string | null>;
  /** Writes anything held back (key uses, request windows); resolves once it is durable. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** The newest delivery log entries kept per endpoint, on every backend. */
export const LOG_RETENTION = 100;

/** Base of the store's errors: backend-neutral, no file paths or SQL in the message. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/**
 * A write broke one of the store's rules (a unique key, a reference). `constraint` names it:
 * `users.email`, `sites.domain`, `subscriptions.main_domain`, `domains.owner`,
 * `subscriptions.missing`, `users.customer`, and `sites.create`'s `subscriptions.forbidden`,
 * `subscriptions.none`, `subscriptions.inactive`, `sites.delete`'s `sites.missing` and
 * `sites.forbidden`, `subscriptions.setStatus`'s `subscriptions.status`.
 */
export class StoreConflictError extends StoreError {
  constructor(
    readonly constraint: string,
    message: string,
  ) {
    super(message);
    this.name = 'StoreConflictError';
  }
}

/** The store could not be reached or could not make a change durable; nothing was changed. */
export class StoreUnavailableError extends StoreError {
  constructor(message = 'the store is unavailable', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** Raised at open when the store cannot be read; the daemon stops with its message. */
export class StoreCorruptError extends StoreError {
  constructor(
    readonly where: string,
    reason: string,
  ) {
    super(`store ${where} cannot be read: ${reason}. It was left untouched; restore it from a backup or move it away.`);
    this.name = 'StoreCorruptError';
  }
}
