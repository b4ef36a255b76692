// The JSON store's repositories. Reads look at memory; changes go through `run`, which hands
// the change a Writer: the transaction's own inside `store.transaction`, else a fresh one
// committed on its own. The store's rules (unique keys, references, cascades) are checked
// here, inside the single-threaded change, so concurrent requests cannot both pass them.
import { randomUUID } from 'node:crypto';
import { isOperational } from '../../shared/events.js';
import type { Settings, SettingsPatch } from '../../shared/settings.js';
import {
  StoreConflictError,
  recordEventOf,
  deliveryFromTemplate,
  type ApiKeysRepository,
  type ClaimOptions,
  type DeliveryLogRepository,
  type DeliveryOutcome,
  type DeliveryTemplate,
  type IdRange,
  type LimiterRepository,
  type NewRecord,
  type NewSite,
  type OutboxRepository,
  type QueuedDelivery,
  type Repositories,
  type ResetTokensRepository,
  type RevokedTokensRepository,
  type SettingsRepository,
  type SitesRepository,
  type SubscriptionsRepository,
  type UsersRepository,
  type WebhooksRepository,
} from '../store.js';
import type {
  ApiKeyRecord,
  DeliveryRecord,
  EventRecord,
  LimiterRecord,
  ResetTokenRecord,
  SiteRecord,
  SubscriptionRecord,
  UserRecord,
  WebhookRecord,
} from '../types.js';
import { lower, type RevokedToken, type State, type Writer } from './state.js';

export interface RunOptions {
  /** false: written without fsync, and not waited for (soft state such as request windows). */
  durable?: boolean;
}

/** Runs a change with a Writer: synchronously inside a transaction, or as its own commit. */
export type Run = <T>(change: (writer: Writer) => T, options?: RunOptions) => Promise<T>;

const byId = <T extends { id: number }>(a: T, b: T) => a.id - b.id;

function sorted<T extends { id: number }>(records: T[]): T[] {
  return records.sort(byId);
}

/** The part of `records` (by id) that `range` names. */
function within<T extends { id: number }>(records: T[], range: IdRange = {}): T[] {
  const { after, limit } = range;
  if (after === undefined && limit === undefined) return records;
  let from = 0;
  if (after !== undefined) while (from < records.length && records[from].id <= after) from++;
  return records.slice(from, limit === undefined ? undefined : from + limit);
}

export class JsonRepositories implements Repositories {
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

  constructor(
    state: State,
    run: Run,
    readonly deliveryLog: DeliveryLogRepository,
    hooks: {
      /** Endpoints whose log files go once their removal is committed. */
      removeLogs(endpointIds: number[]): Promise<void>;
      /** An API key whose use was recorded in memory only. */
      touched(id: number): void;
      /**
       * A request window's new record, applied as a soft change with no writer (see
       * JsonStore#putWindow); absent in a transaction, where the hit joins its writer.
       */
      putWindow?(record: LimiterRecord): Promise<LimiterRecord>;
    },
  ) {
    const removeWebhook = (w: Writer, id: number): WebhookRecord | undefined => {
      const removed = w.delete<WebhookRecord>('webhooks', id);
      if (!removed) return undefined;
      for (const delivery of state.lanes.ofEndpoint(id)) w.delete('deliveries', delivery.id);
      w.change({ kind: 'record', collection: 'webhooks', id });
      w.afterCommit.push(() => hooks.removeLogs([id]));
      return removed;
    };
    const removeSubscription = (w: Writer, id: number): SubscriptionRecord | undefined => {
      const removed = w.delete<SubscriptionRecord>('subscriptions', id);
      if (!removed) return undefined;
      for (const site of state.sites.byGroup('subscription', id)) {
        w.delete('sites', site.id);
        w.change({ kind: 'record', collection: 'sites', id: site.id });
      }
      w.change({ kind: 'record', collection: 'subscriptions', id });
      return removed;
    };
    // The owner's and every admin's endpoints, from the index: a lookup per user, whatever the
    // number of endpoints. Admins are found by role at match time, so a role change needs no
    // index of its own.
    const subscribedTo = (event: string, ownerId: number | null): WebhookRecord[] => {
      // An operational event reaches only the owner's endpoints that name it.
      if (isOperational(event)) return ownerId === null ? [] : state.endpoints.match(event, [ownerId], false);
      const admins = state.users.byGroup('role', 'admin').map((u) => u.id);
      return state.endpoints.match(event, ownerId === null ? admins : [ownerId, ...admins]);
    };
    /** `outbox.publish` inside a change (the caller's): the endpoints are matched there, so none is removed in between. */
    const publishIn = (w: Writer, { record: event, template }: { record: EventRecord; template: DeliveryTemplate }): QueuedDelivery[] => {
      const deliveries = subscribedTo(event.event, event.owner_id).map((endpoint) =>
        deliveryFromTemplate(randomUUID(), endpoint.id, endpoint.user_id, event.event, template),
      );
      if (deliveries.length === 0) return [];
      w.enqueue(deliveries);
      w.change({ kind: 'outbox' });
      return deliveries.map((d) => ({ id: d.id, endpoint_id: d.endpoint_id }));
    };
    // A paused endpoint's deliveries stay in its lane, left out of every claim (a map lookup per lane).
    const paused = (endpointId: number): boolean => state.webhooks.get(endpointId)?.paused === true;
    const emailTaken = (email: string, except?: number) => {
      const other = state.users.byUnique('email', lower(email));
      if (other && other.id !== except) throw new StoreConflictError('users.email', `a user with email ${lower(email)} already exists`);
    };

    this.users = {
      get: async (id) => state.users.get(id),
      byEmail: async (email) => state.users.byUnique('email', lower(email)),
      list: async () => sorted(state.users.values()),
      count: async () => state.users.size,
      insert: (record) =>
        run((w) => {
          emailTaken(record.email);
          const user = w.put('users', { id: w.nextId('users'), ...record } as UserRecord);
          w.change({ kind: 'record', collection: 'users', id: user.id });
          return user;
        }),
      update: (id, patch) =>
        run((w) => {
          const current = state.users.get(id);
          if (!current) return undefined;
          if (patch.email !== undefined) emailTaken(patch.email, id);
          const user = w.put('users', { ...current, ...patch, id } as UserRecord);
          w.change({ kind: 'record', collection: 'users', id });
          return user;
        }),
      remove: (id) =>
        run((w) => {
          const user = w.delete<UserRecord>('users', id);
          if (!user) return undefined;
          for (const key of state.api_keys.byGroup('user', id)) {
            w.delete('api_keys', key.id);
            w.change({ kind: 'record', collection: 'api_keys', id: key.id });
          }
          for (const hook of state.webhooks.byGroup('user', id)) removeWebhook(w, hook.id);
          for (const token of state.reset_tokens.byGroup('user', id)) w.delete('reset_tokens', token.id);
          for (const subscription of state.subscriptions.byGroup('customer', id)) removeSubscription(w, subscription.id);
          w.change({ kind: 'record', collection: 'users', id });
          return user;
        }),
    };

    this.apiKeys = {
      get: async (id) => state.api_keys.get(id),
      byHash: async (hash) => state.api_keys.byUnique('hash', hash),
      callerByHash: async (hash) => {
        const key = state.api_keys.byUnique('hash', hash);
        const user = key && state.users.get(key.user_id);
        return key && user ? { key, user } : undefined;
      },
      listByUser: async (userId) => sorted(state.api_keys.byGroup('user', userId)),
      insert: (record) =>
        run((w) => {
          const key = w.put('api_keys', { id: w.nextId('api_keys'), ...record } as ApiKeyRecord);
          w.change({ kind: 'record', collection: 'api_keys', id: key.id });
          return key;
        }),
      remove: (id) =>
        run((w) => {
          const key = w.delete<ApiKeyRecord>('api_keys', id);
          if (key) w.change({ kind: 'record', collection: 'api_keys', id });
          return key;
        }),
      touch: async (id, atMs) => {
        const key = state.api_keys.get(id);
        if (!key) return;
        const at = new Date(Math.floor(atMs / 1000) * 1000).toISOString();
        if (key.last_used_at !== null && key.last_used_at >= at) return;
        // In memory at once; written with the next write, or by the store's timer. No change
        // event: a use changes no one's access, and caches must not be dropped per request.
        state.api_keys.put({ ...key, last_used_at: at });
        hooks.touched(id);
      },
    };

    const defaultFor = (customerId: number) => {
      const own = sorted(state.subscriptions.byGroup('customer', customerId));
      return own.find((s) => s.is_default) ?? own[0];
    };
    const insertSubscription = (w: Writer, record: NewRecord<SubscriptionRecord>): SubscriptionRecord => {
      const customer = state.users.get(record.customer_id);
      if (!customer || customer.role !== 'customer') {
        throw new StoreConflictError('users.customer', `user ${record.customer_id} is not a customer`);
      }
      const taken = state.subscriptions.byUnique('main_domain', record.main_domain);
      if (taken) {
        throw new StoreConflictError('subscriptions.main_domain', `a subscription with main domain ${record.main_domain} already exists (subscription ${taken.id})`);
      }
      const site = state.sites.byUnique('domain', record.main_domain);
      if (site && state.subscriptions.get(site.subscription_id)?.customer_id !== record.customer_id) {
        throw new StoreConflictError('domains.owner', `${record.main_domain} is a site of another customer`);
      }
      const own = state.subscriptions.byGroup('customer', record.customer_id);
      const isDefault = record.is_default || own.length === 0;
      if (isDefault) {
        for (const other of own) {
          if (!other.is_default) continue;
          w.put('subscriptions', { ...other, is_default: false, updated_at: record.created_at });
          w.change({ kind: 'record', collection: 'subscriptions', id: other.id });
        }
      }
      const subscription = w.put('subscriptions', { id: w.nextId('subscriptions'), ...record, is_default: isDefault } as SubscriptionRecord);
      w.change({ kind: 'record', collection: 'subscriptions', id: subscription.id });
      return subscription;
    };
    this.subscriptions = {
      get: async (id) => state.subscriptions.get(id),
      list: async () => sorted(state.subscriptions.values()),
      listByCustomer: async (customerId) => sorted(state.subscriptions.byGroup('customer', customerId)),
      defaultFor: async (customerId) => defaultFor(customerId),
      insert: (record) => run((w) => insertSubscription(w, record)),
      create: (record, event) =>
        run((w) => {
          const subscription = insertSubscription(w, record);
          publishIn(w, recordEventOf(event, subscription.customer_id, subscription));
          return subscription;
        }),
      update: (id, patch) =>
        run((w) => {
          const current = state.subscriptions.get(id);
          if (!current) return undefined;
          const updated = w.put('subscriptions', { ...current, ...patch, id });
          w.change({ kind: 'record', collection: 'subscriptions', id });
          return updated;
        }),
      setStatus: (id, status, updatedAt, event) =>
        run((w) => {
          const current = state.subscriptions.get(id);
          if (!current) throw new StoreConflictError('subscriptions.missing', `subscription ${id} does not exist`);
          if (current.status === status) throw new StoreConflictError('subscriptions.status', `subscription ${id} is already ${status}`);
          const updated = w.put('subscriptions', { ...current, status, updated_at: updatedAt, id });
          w.change({ kind: 'record', collection: 'subscriptions', id });
          publishIn(w, recordEventOf(event, updated.customer_id, updated));
          return updated;
        }),
      remove: (id) => run((w) => removeSubscription(w, id)),
    };

    const insertSite = (w: Writer, record: NewRecord<SiteRecord>): SiteRecord => {
      const subscription = state.subscriptions.get(record.subscription_id);
      if (!subscription) throw new StoreConflictError('subscriptions.missing', `subscription ${record.subscription_id} does not exist`);
      if (state.sites.byUnique('domain', record.domain)) {
        throw new StoreConflictError('sites.domain', `a site with domain ${record.domain} already exists`);
      }
      const claimed = state.subscriptions.byUnique('main_domain', record.domain);
      if (claimed && claimed.customer_id !== subscription.customer_id) {
        throw new StoreConflictError('domains.owner', `${record.domain} is the main domain of another customer's subscription`);
      }
      const site = w.put('sites', { id: w.nextId('sites'), ...record } as SiteRecord);
      w.change({ kind: 'record', collection: 'sites', id: site.id });
      return site;
    };
    /** The subscription a new site goes into (see SitesRepository.create), or the conflict why none. */
    const siteSubscription = (site: NewSite): SubscriptionRecord => {
      let subscription: SubscriptionRecord | undefined;
      if (site.subscription_id !== undefined) {
        subscription = state.subscriptions.get(site.subscription_id);
        if (!subscription) throw new StoreConflictError('subscriptions.missing', `subscription ${site.subscription_id} does not exist`);
        if (site.customer_id !== null && subscription.customer_id !== site.customer_id) {
          throw new StoreConflictError('subscriptions.forbidden', `subscription ${subscription.id} belongs to another customer`);
        }
      } else {
        subscription = site.customer_id === null ? undefined : defaultFor(site.customer_id);
        if (!subscription) throw new StoreConflictError('subscriptions.none', 'there is no subscription to create the site in');
      }
      if (subscription.status !== 'active') {
        throw new StoreConflictError('subscriptions.inactive', `subscription ${subscription.id} is ${subscription.status} and accepts no new sites`);
      }
      return subscription;
    };
    this.sites = {
      get: async (id) => state.sites.get(id),
      list: async () => sorted(state.sites.values()),
      listBySubscription: async (subscriptionId) => sorted(state.sites.byGroup('subscription', subscriptionId)),
      count: async () => state.sites.size,
      insert: (record) => run((w) => insertSite(w, record)),
      create: (site, event) =>
        run((w) => {
          const subscription = siteSubscription(site);
          const record = insertSite(w, { subscription_id: subscription.id, domain: site.domain, created_at: site.created_at });
          publishIn(w, recordEventOf(event, subscription.customer_id, record));
          return record;
        }),
      remove: (id) =>
        run((w) => {
          const site = w.delete<SiteRecord>('sites', id);
          if (site) w.change({ kind: 'record', collection: 'sites', id });
          return site;
        }),
      delete: (id, customerId, event) =>
        run((w) => {
          const site = state.sites.get(id);
          if (!site) throw new StoreConflictError('sites.missing', `site ${id} does not exist`);
          // Sites of a deleted customer go with their subscriptions, so a site always has one.
          const owner = state.subscriptions.get(site.subscription_id)?.customer_id ?? null;
          if (customerId !== null && owner !== customerId) throw new StoreConflictError('sites.forbidden', `site ${id} belongs to another customer`);
          w.delete<SiteRecord>('sites', id);
          w.change({ kind: 'record', collection: 'sites', id });
          publishIn(w, recordEventOf(event, owner, site));
          return site;
        }),
    };

    this.webhooks = {
      get: async (id) => state.webhooks.get(id),
      getWithLogRevision: async (id) => {
        const endpoint = state.webhooks.get(id);
        return endpoint && { endpoint, logRevision: await deliveryLog.revision(id) };
      },
      getMany: async (ids) => sorted([...new Set(ids)].flatMap((id) => state.webhooks.get(id) ?? [])),
      list: async (range) => within(sorted(state.webhooks.values()), range),
      listByUser: async (userId, range) => within(sorted(state.webhooks.byGroup('user', userId)), range),
      subscribedTo: async (event, ownerId) => subscribedTo(event, ownerId),
      count: async () => state.webhooks.size,
      countByState: async () => {
        let active = 0;
        for (const webhook of state.webhooks.values()) if (webhook.active) active++;
        return { active, inactive: state.webhooks.size - active };
      },
      insert: (record) =>
        run((w) => {
          const hook = w.put('webhooks', { id: w.nextId('webhooks'), ...record } as WebhookRecord);
          w.change({ kind: 'record', collection: 'webhooks', id: hook.id });
          return hook;
        }),
      update: (id, patch) =>
        run((w) => {
          const current = state.webhooks.get(id);
          if (!current) return undefined;
          const hook = w.put('webhooks', { ...current, ...patch, id } as WebhookRecord);
          w.change({ kind: 'record', collection: 'webhooks', id });
          // Resumed: its kept deliveries are claimable again; the dispatcher claims now.
          if (patch.paused === false && current.paused) w.change({ kind: 'outbox' });
          return hook;
        }),
      remove: (id) => run((w) => removeWebhook(w, id)),
      forgetExpiredSecrets: (now) =>
        run((w) => {
          let forgotten = 0;
          for (const hook of state.webhooks.values()) {
            if (!hook.previous_secret_expires_at || hook.previous_secret_expires_at > now) continue;
            w.put('webhooks', { ...hook, previous_secret: null, previous_secret_expires_at: null });
            w.change({ kind: 'record', collection: 'webhooks', id: hook.id });
            forgotten++;
          }
          return forgotten;
        }),
    };

    this.resetTokens = {
      byHash: async (hash) => state.reset_tokens.byUnique('hash', hash),
      insert: (record) => run((w) => w.put('reset_tokens', { id: w.nextId('reset_tokens'), ...record } as ResetTokenRecord)),
      markUsed: (id, at) =>
        run((w) => {
          const token = state.reset_tokens.get(id);
          if (!token || token.used_at !== null) return false;
          w.put('reset_tokens', { ...token, used_at: at });
          return true;
        }),
      removeForUser: (userId, now) =>
        run((w) => {
          for (const token of state.reset_tokens.values()) {
            if (token.user_id === userId || Date.parse(token.expires_at) <= now) w.delete('reset_tokens', token.id);
          }
        }),
    };

    this.revokedTokens = {
      revoke: (jti, expiresAt) =>
        run((w) => {
          w.put<RevokedToken>('revoked_tokens', { jti, expires_at: expiresAt });
          // Open streams of the token end on this (see daemon/auth/caller-watch.ts).
          w.change({ kind: 'record', collection: 'revoked_tokens', id: null });
        }),
      isRevoked: async (jti) => state.revoked_tokens.get(jti) !== undefined,
      prune: (now) =>
        run((w) => {
          for (const token of state.revoked_tokens.values()) if (token.expires_at <= now) w.delete('revoked_tokens', token.jti);
        }),
    };

    /** `key`'s window after one hit at `now`: a window (or lock) that ended starts afresh. */
    const afterHit = (key: string, windowMs: number, now: number): LimiterRecord => {
      const previous = state.limiter.get(key);
      const ended = !previous || now >= previous.window_start + windowMs || (previous.locked_until !== 0 && previous.locked_until <= now);
      // Written out rather than spread: every API request makes one, and a spread of a frozen record is the slower copy.
      return ended
        ? { key, count: 1, window_start: now, locked_until: 0 }
        : { key, count: previous.count + 1, window_start: previous.window_start, locked_until: previous.locked_until };
    };
    const { putWindow } = hooks;
    this.limiter = {
      hit: (key, windowMs, now) => run((w) => w.put('limiter', afterHit(key, windowMs, now))),
      // Applied in memory at once and written with the store's soft changes (a second at most).
      // Every API request makes one, so outside a transaction it skips the writer.
      countRequest: putWindow
        ? (key, windowMs, now) => putWindow(afterHit(key, windowMs, now))
        : (key, windowMs, now) => run((w) => w.put('limiter', afterHit(key, windowMs, now), false), { durable: false }),
      release: (key) =>
        run((w) => {
          const current = state.limiter.get(key);
          if (current && current.count > 0) w.put('limiter', { ...current, count: current.count - 1 });
        }),
      lock: (key, until) =>
        run((w) => {
          const current = state.limiter.get(key) ?? { key, count: 0, window_start: until, locked_until: 0 };
          return w.put('limiter', { ...current, locked_until: Math.max(current.locked_until, until) });
        }),
      get: async (key) => state.limiter.get(key),
      prune: (now, windowMs) =>
        run(
          (w) => {
            for (const record of state.limiter.values()) {
              if (record.locked_until <= now && record.window_start + windowMs <= now) w.delete('limiter', record.key, false);
            }
          },
          { durable: false },
        ),
      remove: (key) => run((w) => w.delete('limiter', key) !== undefined),
      removePrefix: (prefix) =>
        run((w) => {
          let removed = 0;
          for (const record of state.limiter.values()) {
            if (record.key.startsWith(prefix)) removed += w.delete('limiter', record.key) !== undefined ? 1 : 0;
          }
          return removed;
        }),
    };

    this.settings = {
      get: async () => state.settingsView,
      update: (patch: SettingsPatch) =>
        run((w): Settings => {
          w.setSettings({ ...state.settings, ...patch });
          w.change({ kind: 'record', collection: 'settings', id: null });
          return state.settingsView;
        }),
    };

    this.outbox = {
      enqueue: (_event: EventRecord, deliveries: DeliveryRecord[]) =>
        run((w) => {
          if (deliveries.length === 0) return;
          w.enqueue(deliveries);
          w.change({ kind: 'outbox' });
        }),
      // The endpoints are matched inside the change, so none is removed in between.
      publish: (event: EventRecord, template: DeliveryTemplate) => run((w) => publishIn(w, { record: event, template })),
      // Records are made as deliveries leave the store; inside it they are compact entries.
      claim: async (options: ClaimOptions) => state.lanes.claim(options, (id) => state.deliveries.entry(id), paused).map((d) => d.record()),
      settle: (owner: string, outcomes: DeliveryOutcome[]) =>
        run((w) => {
          const recorded: string[] = [];
          for (const outcome of outcomes) {
            if (!state.deliveries.has(outcome.id) || !state.lanes.holds(owner, outcome.id)) continue;
            state.lanes.settle(owner, outcome.id);
            recorded.push(outcome.id);
            // A pending retry is fsynced: its 2 s delay and the two-attempt limit must survive a
            // crash. A final outcome is only written: lost in a crash, the delivery is sent once
            // more, which at-least-once delivery allows (receivers deduplicate by X-Webhook-Delivery).
            if (outcome.state === 'pending') {
              w.put('deliveries', { ...state.deliveries.get(outcome.id)!, attempts: outcome.attempts, next_attempt_at: outcome.next_attempt_at });
            } else w.deleteDelivery(outcome.id, false);
          }
          if (outcomes.some((o) => o.state === 'pending')) w.change({ kind: 'outbox' });
          return recorded;
        }),
      // The log lives in files of its own: entries are appended before the outcomes are settled.
      // A daemon that dies in between attempts the delivery again, and the log shows both
      // attempts (OutboxRepository.record is not atomic).
      record: async (owner, outcomes, entries) => {
        const appended = entries.length ? await deliveryLog.append(entries) : [];
        if (outcomes.length) await this.outbox.settle(owner, outcomes);
        return appended;
      },
      release: async (owner, ids) => {
        for (const id of ids) state.lanes.release(owner, id);
      },
      // One daemon per JSON store: nobody else to hand anything to.
      leave: async () => undefined,
      // Leases live in memory, so a restarted daemon never sees its predecessor's; within one
      // process this hands back what `owner` holds.
      abandon: async (owner) => state.lanes.releaseAll(owner),
      nextDueAt: async () => state.lanes.nextDueAt(paused),
      nextRetryAt: async (endpointIds) => {
        const due = new Map<number, number>();
        for (const id of endpointIds) {
          const at = state.lanes.nextRetryAt(id);
          if (at !== null) due.set(id, at);
        }
        return due;
      },
      pendingByEndpoint: async (endpointIds) => {
        const counts = new Map<number, number>();
        for (const id of endpointIds) {
          const n = state.lanes.pendingOf(id);
          if (n > 0) counts.set(id, n);
        }
        return counts;
      },
      pendingCount: async () => state.deliveries.size,
      stats: async () => ({ pending: state.deliveries.size, oldest_pending_at: state.deliveries.oldestCreatedAt() }),
      get: async (id) => state.deliveries.get(id),
    };
  }
}

export type { NewRecord };
