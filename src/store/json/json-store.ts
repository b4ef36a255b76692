// The JSON file store: one lowdb document (store.json) for records and settings, a journal for
// the webhook outbox and per-endpoint delivery logs. Implements the Store interface.
import { mkdir, readFile } from 'node:fs/promises';
import { Low, type Adapter } from 'lowdb';
import { DEFAULT_SETTINGS, type Settings, type SettingsPatch } from '../../shared/settings.js';
import type { DataLayout } from '../../shared/paths.js';
import { emptyData, migrate } from '../migrations.js';
import {
  StoreCorruptError,
  StoreWriteError,
  type ApiKeysRepository,
  type LimiterRepository,
  type SettingsRepository,
  type Store,
  type SubscriptionsRepository,
  type UsersRepository,
} from '../store.js';
import type {
  ApiKeyRecord,
  LimiterRecord,
  ResetTokenRecord,
  SiteRecord,
  StoreData,
  SubscriptionRecord,
  UserRecord,
  WebhookRecord,
} from '../types.js';
import { JsonCollection, type CollectionHost } from './collection.js';
import { JsonDeliveryLog } from './delivery-log.js';
import { CoalescingWriter, type WriteFn } from './durable-writer.js';
import { JsonOutbox } from './outbox.js';

/** lowdb adapter: strict reads (a bad file is an error, never replaced) and coalesced durable writes. */
class DurableJsonAdapter implements Adapter<StoreData> {
  readonly writer: CoalescingWriter;

  constructor(readonly path: string, writeFn?: WriteFn) {
    this.writer = new CoalescingWriter(path, 0o600, writeFn);
  }

  async read(): Promise<StoreData | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreCorruptError(this.path, (error as Error).message);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new StoreCorruptError(this.path, `not valid JSON (${(error as Error).message})`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new StoreCorruptError(this.path, 'not a JSON object');
    }
    return parsed as StoreData;
  }

  write(data: StoreData): Promise<void> {
    return this.writer.write(() => JSON.stringify(data));
  }
}

export interface JsonStoreOptions {
  /** Create an empty store when the file does not exist (init); otherwise that is an error. */
  create?: boolean;
  /** Replaces the disk write, for fault-injection tests. */
  writeFn?: WriteFn;
  /** How long coalesced, non-critical changes (request windows, lockout clean-up) may wait. */
  lazyFlushMs?: number;
  /**
   * How long recorded API key uses (`last_used_at`) may wait for a write of their own. Any
   * earlier write takes them along. Rewriting the whole store each second for them would cost a
   * 2 MB write a second with 10,000 keys.
   */
  usageFlushMs?: number;
}

export class JsonStore implements Store, CollectionHost {
  readonly users: UsersRepository;
  readonly apiKeys: ApiKeysRepository;
  readonly subscriptions: JsonCollection<SubscriptionRecord> & SubscriptionsRepository;
  readonly sites: JsonCollection<SiteRecord>;
  readonly webhooks: JsonCollection<WebhookRecord>;
  readonly resetTokens: JsonCollection<ResetTokenRecord>;
  readonly limiter: LimiterRepository;
  readonly settings: SettingsRepository;

  #lazyTimer: NodeJS.Timeout | null = null;
  #lazyDue = Infinity;
  #closed = false;

  private constructor(
    private readonly db: Low<StoreData>,
    private readonly adapter: DurableJsonAdapter,
    readonly outbox: JsonOutbox,
    readonly deliveryLog: JsonDeliveryLog,
    private readonly lazyFlushMs: number,
    private readonly usageFlushMs: number,
  ) {
    const data = () => this.db.data;
    const users = new JsonCollection<UserRecord>(this, 'users', () => data().users, {
      email: (u) => u.email.toLowerCase(),
    });
    const apiKeys = new JsonCollection<ApiKeyRecord>(this, 'api_keys', () => data().api_keys, {
      hash: (k) => k.key_hash,
    });
    const subscriptions = new JsonCollection<SubscriptionRecord>(this, 'subscriptions', () => data().subscriptions);
    this.sites = new JsonCollection(this, 'sites', () => data().sites);
    this.webhooks = new JsonCollection(this, 'webhooks', () => data().webhooks);
    this.resetTokens = new JsonCollection(this, 'reset_tokens', () => data().reset_tokens);

    const store = this;
    this.users = Object.assign(users, {
      async byEmail(email: string) {
        return users.lookup('email', email.toLowerCase());
      },
      async removeCascade(id: number) {
        const user = users.getSync(id);
        if (!user) return undefined;
        const owned = (r: { user_id: number }) => r.user_id === id;
        const keys = apiKeys.detachWhere(owned);
        const hooks = store.webhooks.detachWhere(owned);
        const tokens = store.resetTokens.detachWhere(owned);
        const subs = subscriptions.detachWhere((s) => s.customer_id === id);
        const subIds = new Set(subs.map((s) => s.id));
        const sites = store.sites.detachWhere((s) => subIds.has(s.subscription_id));
        try {
          await users.remove(id);
        } catch (error) {
          apiKeys.reattach(keys);
          store.webhooks.reattach(hooks);
          store.resetTokens.reattach(tokens);
          subscriptions.reattach(subs);
          store.sites.reattach(sites);
          throw error;
        }
        await Promise.all(hooks.map((hook) => store.deliveryLog.removeEndpoint(hook.id)));
        return user;
      },
    });
    this.subscriptions = Object.assign(subscriptions, {
      async create(record: Omit<SubscriptionRecord, 'id'>) {
        // The previous default loses its mark in memory first, so the insert's commit carries both.
        const cleared = record.is_default
          ? data().subscriptions.filter((s) => s.customer_id === record.customer_id && s.is_default)
          : [];
        const before = cleared.map((s) => ({ ...s }));
        for (const s of cleared) Object.assign(s, { is_default: false, updated_at: record.created_at });
        try {
          return await subscriptions.insert(record);
        } catch (error) {
          cleared.forEach((s, i) => Object.assign(s, before[i]));
          throw error;
        }
      },
    });
    // The second each key was last recorded as used in, so repeated uses in one second cost a lookup.
    const touchedSecond = new WeakMap<ApiKeyRecord, number>();
    this.apiKeys = Object.assign(apiKeys, {
      async byHash(hash: string) {
        return apiKeys.lookup('hash', hash);
      },
      touch(id: number, atMs: number) {
        const key = apiKeys.getSync(id);
        if (!key) return;
        const second = Math.floor(atMs / 1000);
        if (touchedSecond.get(key) === second) return;
        touchedSecond.set(key, second);
        key.last_used_at = new Date(second * 1000).toISOString();
        store.#scheduleLazyWrite(store.usageFlushMs);
      },
    });

    const limiterIndex = new Map<string, LimiterRecord>(data().limiter.map((r) => [r.key, r]));
    this.limiter = {
      async get(key) {
        return limiterIndex.get(key);
      },
      async put(record, durable = true) {
        const existing = limiterIndex.get(record.key);
        if (existing) Object.assign(existing, record);
        else {
          const copy = { ...record };
          limiterIndex.set(record.key, copy);
          data().limiter.push(copy);
        }
        if (durable) await store.commit();
        else store.#scheduleLazyWrite();
      },
      async delete(key) {
        const existing = limiterIndex.get(key);
        if (!existing) return;
        limiterIndex.delete(key);
        data().limiter.splice(data().limiter.indexOf(existing), 1);
        store.#scheduleLazyWrite();
      },
      async prune(now, windowMs) {
        const keep = data().limiter.filter((r) => r.locked_until > now || r.window_start + windowMs > now);
        if (keep.length === data().limiter.length) return;
        for (const r of data().limiter) if (!keep.includes(r)) limiterIndex.delete(r.key);
        data().limiter = keep;
        store.#scheduleLazyWrite();
      },
    };

    // Read on every request (request limits): one frozen snapshot, rebuilt after each change.
    let settings: Readonly<Settings> | null = null;
    const currentSettings = () => (settings ??= Object.freeze({ ...DEFAULT_SETTINGS, ...data().settings }));
    this.settings = {
      async get(): Promise<Settings> {
        return currentSettings();
      },
      current: currentSettings,
      async update(patch: SettingsPatch): Promise<Settings> {
        const before = { ...data().settings };
        Object.assign(data().settings, patch);
        settings = null;
        try {
          await store.commit();
        } catch (error) {
          data().settings = before;
          settings = null;
          throw error;
        }
        return currentSettings();
      },
    };
  }

  /**
   * Opens (or with `create`, creates) the store in a data directory.
   * @example
   * const store = await JsonStore.open(layout('/var/lib/panelctl'));
   */
  static async open(paths: DataLayout, options: JsonStoreOptions = {}): Promise<JsonStore> {
    const adapter = new DurableJsonAdapter(paths.store, options.writeFn);
    const initial = await adapter.read();
    const existed = initial !== null;
    // Given its data directly: one read of the file, not a second through db.read().
    const db = new Low<StoreData>(adapter, initial ?? emptyData());
    if (!existed && !options.create) {
      throw new StoreCorruptError(paths.store, 'the file does not exist (run `panelctl init`)');
    }
    let changed = !existed;
    try {
      changed = migrate(db.data as unknown as Record<string, unknown>) || changed;
    } catch (error) {
      throw new StoreCorruptError(paths.store, (error as Error).message);
    }
    await mkdir(paths.root, { recursive: true, mode: 0o700 });
    const outbox = await JsonOutbox.open(paths.outbox);
    const deliveryLog = await JsonDeliveryLog.open(paths.deliveriesDir);
    const store = new JsonStore(db, adapter, outbox, deliveryLog, options.lazyFlushMs ?? 1000, options.usageFlushMs ?? 30_000);
    if (changed) await store.commit();
    return store;
  }

  nextId(collection: string): number {
    const counters = this.db.data.counters;
    counters[collection] = (counters[collection] ?? 0) + 1;
    return counters[collection];
  }

  async commit(): Promise<void> {
    if (this.#closed) throw new StoreWriteError(this.adapter.path, new Error('store is closed'));
    try {
      await this.db.write();
    } catch (error) {
      throw error instanceof StoreWriteError ? error : new StoreWriteError(this.adapter.path, error);
    }
  }

  /** One pending lazy write, due at the earliest time any change asked for. */
  #scheduleLazyWrite(delayMs = this.lazyFlushMs): void {
    if (this.#closed) return;
    const due = Date.now() + delayMs;
    if (this.#lazyTimer && this.#lazyDue <= due) return;
    if (this.#lazyTimer) clearTimeout(this.#lazyTimer);
    this.#lazyDue = due;
    this.#lazyTimer = setTimeout(() => {
      this.#lazyTimer = null;
      this.#lazyDue = Infinity;
      this.db.write().catch(() => undefined);
    }, delayMs);
    this.#lazyTimer.unref();
  }

  async flush(): Promise<void> {
    if (this.#lazyTimer) {
      clearTimeout(this.#lazyTimer);
      this.#lazyTimer = null;
      this.#lazyDue = Infinity;
      await this.commit();
    }
    await this.adapter.writer.idle();
    await this.outbox.compact().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    await this.outbox.close();
    await this.deliveryLog.close();
  }
}
