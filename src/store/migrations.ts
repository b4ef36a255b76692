// Schema versions of the JSON store document. Each migration lifts the document by one
// version; the store runs the missing ones at open and writes the result back.
import type { Snapshot } from './json/state.js';

export const SCHEMA_VERSION = 3;

export interface Migration {
  to: number;
  up(data: Record<string, unknown>): void;
}

/** Ordered by `to`. Add one entry per schema change, never edit a released one. */
export const MIGRATIONS: Migration[] = [
  // 2: the write-ahead journal; the outbox moved from outbox.jsonl into the store (done at open).
  { to: 2, up: () => undefined },
  // 3: pending deliveries as `pending` (per event, a tuple per delivery; read by State.load), so
  // an older build refuses the store rather than opening it without its outbox.
  { to: 3, up: () => undefined },
];

export function emptyData(): Omit<Snapshot, 'journal_gen'> {
  return {
    schema_version: SCHEMA_VERSION,
    counters: {},
    users: [],
    api_keys: [],
    subscriptions: [],
    sites: [],
    webhooks: [],
    reset_tokens: [],
    revoked_tokens: [],
    limiter: [],
    settings: {},
  };
}

/**
 * Brings a parsed document up to SCHEMA_VERSION. Returns true when it changed.
 * Throws when the document is newer than this build understands.
 */
export function migrate(data: Record<string, unknown>, migrations = MIGRATIONS, target = SCHEMA_VERSION): boolean {
  const version = typeof data.schema_version === 'number' ? data.schema_version : 0;
  if (version > target) {
    throw new Error(`schema version ${version} is newer than this panelctl understands (${target}); upgrade panelctl`);
  }
  let changed = false;
  for (const migration of migrations) {
    if (migration.to > version && migration.to <= target) {
      migration.up(data);
      data.schema_version = migration.to;
      changed = true;
    }
  }
  // Collections added in later builds start empty rather than needing a migration each.
  const defaults = emptyData() as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(defaults)) {
    if (!(key in data)) {
      data[key] = value;
      changed = true;
    }
  }
  if (data.schema_version !== target) {
    data.schema_version = target;
    changed = true;
  }
  return changed;
}
