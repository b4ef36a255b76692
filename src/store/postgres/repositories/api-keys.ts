// API keys. A key's use (last_used_at) is held in memory and written in batches by the store
// (PostgresStore's touch flush); every read here shows the held use when it is newer.
import type { ApiKeysRepository } from '../../store.js';
import type { ApiKeyRecord } from '../../types.js';
import type { Row } from '../db.js';
import { changing, type RepositoryFactory } from './context.js';
import { insertStatement, toApiKey, toUser } from '../rows.js';

export const apiKeysRepository: RepositoryFactory<ApiKeysRepository> = (db, ctx) => {
  /** A key as this process knows it: a use held back in memory is newer than the row. */
  const withHeldTouch = (key: ApiKeyRecord): ApiKeyRecord => {
    const held = ctx.heldTouches.get(key.id);
    if (held && (key.last_used_at === null || held > key.last_used_at)) return { ...key, last_used_at: held };
    return key;
  };
  const apiKeys: ApiKeysRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE id = $1', [id]);
      return rows[0] && withHeldTouch(toApiKey(rows[0]));
    },
    async byHash(keyHash) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE key_hash = $1', [keyHash]);
      return rows[0] && withHeldTouch(toApiKey(rows[0]));
    },
    async callerByHash(keyHash) {
      // The user comes as one json column: its columns would otherwise clash with the key's.
      // Not batched: the daemon caches callers (see daemon/auth/callers.ts).
      const { rows } = await db.query('SELECT k.*, to_json(u) AS caller FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1', [keyHash]);
      const row = rows[0];
      return row && { key: withHeldTouch(toApiKey(row)), user: toUser(row.caller as Row) };
    },
    async listByUser(userId) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE user_id = $1 ORDER BY id', [userId]);
      return rows.map((r) => withHeldTouch(toApiKey(r)));
    },
    async insert(record) {
      const { text, values } = insertStatement('api_keys', record);
      const { rows } = await changing(db, 'api_keys', text, values);
      return toApiKey(rows[0]);
    },
    async remove(id) {
      const { rows } = await changing(db, 'api_keys', 'DELETE FROM api_keys WHERE id = $1 RETURNING *', [id]);
      ctx.heldTouches.delete(id);
      return rows[0] && toApiKey(rows[0]);
    },
    async touch(id, atMs) {
      const at = new Date(Math.floor(atMs / 1000) * 1000).toISOString();
      const held = ctx.heldTouches.get(id);
      if (!held || at > held) ctx.heldTouches.set(id, at);
    },
  };
  return apiKeys;
};
