// The panel's settings: one row of jsonb, cached by the store while its change feed is connected.
import { DEFAULT_SETTINGS, type Settings, type SettingsPatch } from '../../../shared/settings.js';
import type { SettingsRepository } from '../../store.js';
import { CHANNEL, type RepositoryFactory } from './context.js';

const settingsOf = (data: unknown): Settings => Object.freeze({ ...DEFAULT_SETTINGS, ...(data as Partial<Settings> | null) });

export const settingsRepository: RepositoryFactory<SettingsRepository> = (db, ctx) => {
  const settings: SettingsRepository = {
    async get() {
      const cached = db.inTransaction ? null : ctx.cachedSettings();
      if (cached) return cached;
      const { rows } = await db.query<{ data: unknown }>('SELECT data FROM settings WHERE id = 1');
      const value = settingsOf(rows[0]?.data ?? null);
      if (!db.inTransaction) ctx.cacheSettings(value);
      return value;
    },
    async update(patch: SettingsPatch) {
      const { rows } = await db.query<{ data: unknown }>(
        `WITH r AS (
           INSERT INTO settings AS s (id, data) VALUES (1, $1::jsonb)
           ON CONFLICT (id) DO UPDATE SET data = s.data || excluded.data
           RETURNING data
         )
         SELECT r.data, pg_notify('${CHANNEL}', '{"kind":"record","collection":"settings","id":null}') FROM r`,
        [JSON.stringify(patch)],
      );
      const value = settingsOf(rows[0].data);
      // Inside a transaction the value is not committed yet: the feed refreshes the cache.
      ctx.cacheSettings(db.inTransaction ? null : value);
      return value;
    },
  };
  return settings;
};
