// The daemon's snapshot of the settings, readable without waiting: the request-limit hook runs
// on every request and must decide synchronously whether it has anything to do. The store
// only answers asynchronously; the snapshot is read at start, refreshed when the change feed
// reports a settings change (another daemon's too, a moment later with a shared database) and
// after this daemon's own updates.
import type { Settings, SettingsPatch } from '../shared/settings.js';
import type { Store } from '../store/store.js';

export class SettingsCache {
  #current: Readonly<Settings>;
  #unsubscribe: () => void = () => undefined;
  /** Bumped on every refresh started, so an older read never overwrites a newer one. */
  #generation = 0;

  private constructor(
    private readonly store: Store,
    initial: Settings,
    private readonly onError: (error: unknown) => void,
  ) {
    this.#current = Object.freeze({ ...initial });
  }

  /**
   * Reads the settings and follows their changes.
   * @example
   * const settings = await SettingsCache.open(store, (err) => log.error({ err }, 'settings'));
   * if (settings.current().rate_limit_mode === 'lockout') …
   */
  static async open(store: Store, onError: (error: unknown) => void = () => undefined): Promise<SettingsCache> {
    const cache = new SettingsCache(store, await store.settings.get(), onError);
    cache.#unsubscribe = store.changes.subscribe((change) => {
      if (change.kind === 'record' && change.collection === 'settings') void cache.refresh();
    });
    return cache;
  }

  /** The last settings read; never waits. */
  current(): Readonly<Settings> {
    return this.#current;
  }

  /** Reads the settings again (a failed read keeps the previous snapshot). */
  async refresh(): Promise<Readonly<Settings>> {
    const generation = ++this.#generation;
    try {
      const settings = await this.store.settings.get();
      if (generation === this.#generation) this.#current = Object.freeze({ ...settings });
    } catch (error) {
      this.onError(error);
    }
    return this.#current;
  }

  /** Updates the settings in the store and the snapshot with the result. */
  async update(patch: SettingsPatch): Promise<Readonly<Settings>> {
    const settings = await this.store.settings.update(patch);
    ++this.#generation;
    this.#current = Object.freeze({ ...settings });
    return this.#current;
  }

  close(): void {
    this.#unsubscribe();
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    settings: SettingsCache;
  }
}
