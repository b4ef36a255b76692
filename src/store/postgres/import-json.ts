// `panelctl store migrate --to URL`: copies a stopped JSON store into an empty PostgreSQL
// database, keeping every id, in one transaction: the database ends up with all of it or none.
// The data directory is only read: the snapshot (store.json) with the journals written since
// (journal-<gen>.jsonl) replayed the way the JSON store replays them (its State), the outbox of
// stores older than the journal (outbox.jsonl), deliveries/<endpoint>.jsonl and jwt-secret.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { layout } from '../../shared/paths.js';
import { State, type Op, type Snapshot } from '../json/state.js';
import { migrate } from '../migrations.js';
import { LOG_RETENTION, StoreCorruptError, StoreError } from '../store.js';
import type { DeliveryLogEntry, DeliveryRecord, EventRecord } from '../types.js';
import { mapError } from './errors.js';
import { logExtra } from './rows.js';
import { PostgresStore } from './postgres-store.js';

export interface ImportJsonOptions {
  /** Name under which the JWT signing secret (`jwt-secret`) is shared; default `jwt`. */
  jwtSecretName?: string;
}

export interface ImportSummary {
  users: number;
  api_keys: number;
  subscriptions: number;
  sites: number;
  webhooks: number;
  reset_tokens: number;
  revoked_tokens: number;
  limiter: number;
  settings: boolean;
  jwt_secret: boolean;
  events: number;
  /** Pending deliveries (finished ones are not kept by the JSON store). */
  deliveries: number;
  log_entries: number;
  /** Records left out because what they belong to is gone (an orphan the JSON store kept). */
  skipped: number;
}

/** Tables that must be empty for an import to start. */
const CHECKED_TABLES = ['users', 'api_keys', 'subscriptions', 'sites', 'webhooks', 'reset_tokens', 'deliveries', 'delivery_log', 'settings', 'shared_secrets'];
const CHUNK = 1000;

/**
 * Copies the JSON store of `dataDir` into the (empty) database at `databaseUrl`, creating the
 * schema first. The JSON store must not be in use: stop its daemon first. Refuses a database
 * that already holds panel data.
 * @example
 * const summary = await importJsonStore('/var/lib/panelctl', 'postgres://panel@db/panelctl');
 */
export async function importJsonStore(dataDir: string, databaseUrl: string, options: ImportJsonOptions = {}): Promise<ImportSummary> {
  const paths = layout(dataDir);
  const doc = await readStoreJson(paths.store);
  const state = new State();
  state.load(doc as unknown as Snapshot);
  let events = new Map<string, EventRecord>();
  const eventOf = new Map<string, string>();
  if (typeof doc.journal_gen !== 'number') {
    // Written before the journal: the pending deliveries are in outbox.jsonl.
    const legacy = await readLegacyOutbox(paths.outbox);
    events = legacy.events;
    for (const d of legacy.deliveries.values()) {
      state.deliveries.put({ ...d, owner_id: d.owner_id ?? state.webhooks.get(d.endpoint_id)?.user_id ?? null });
      if (d.event_id) eventOf.set(d.id, d.event_id);
    }
  }
  await replayJournals(paths.root, typeof doc.journal_gen === 'number' ? doc.journal_gen : 1, state);
  const logs = await readLogs(paths.deliveriesDir);
  const jwtSecret = await readFile(paths.jwtSecret, 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
  const data: StoreContent = {
    counters: state.counters,
    users: state.users.values(),
    api_keys: state.api_keys.values(),
    subscriptions: state.subscriptions.values(),
    sites: state.sites.values(),
    webhooks: state.webhooks.values(),
    reset_tokens: state.reset_tokens.values(),
    revoked_tokens: state.revoked_tokens.values(),
    limiter: state.limiter.values(),
    settings: state.settings,
  };
  const deliveries = state.deliveries.values().map((d) => ({ ...d, event_id: eventOf.get(d.id) ?? null }));
  const referenced = new Set(deliveries.map((d) => d.event_id));
  for (const id of [...events.keys()]) if (!referenced.has(id)) events.delete(id);

  // Opening creates (or updates) the schema, under the same lock as any daemon.
  await (await PostgresStore.open(databaseUrl)).close();

  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'panelctl-migrate' });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('BEGIN');
    // Nobody else writes while we check and copy (a daemon started meanwhile waits).
    await client.query(`LOCK TABLE ${CHECKED_TABLES.join(', ')} IN EXCLUSIVE MODE`);
    const used = await client.query<{ t: string }>(CHECKED_TABLES.map((t) => `SELECT '${t}' AS t WHERE EXISTS (SELECT 1 FROM ${t})`).join(' UNION ALL '));
    if (used.rows.length > 0) {
      throw new StoreError(`the database is not empty (it holds ${used.rows.map((r) => r.t).join(', ')}); migrate into an empty database`);
    }
    const summary = await copy(client, data, events, deliveries, logs, jwtSecret, options.jwtSecretName ?? 'jwt');
    await client.query('COMMIT');
    return summary;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw mapError(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

type StoreContent = Pick<Snapshot, 'counters' | 'users' | 'api_keys' | 'subscriptions' | 'sites' | 'webhooks' | 'reset_tokens' | 'revoked_tokens' | 'limiter' | 'settings'>;

async function readStoreJson(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new StoreCorruptError(path, (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the file does not exist' : (error as Error).message);
  }
  try {
    const doc = JSON.parse(text) as Record<string, unknown>;
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a JSON object');
    // Refuses a store newer than this build; fills collections older stores lack.
    migrate(doc);
    return doc;
  } catch (error) {
    throw new StoreCorruptError(path, (error as Error).message);
  }
}

/**
 * Applies the journals from `fromGen` on, in order, as the JSON store does at open; a torn last
 * line of the newest (a write never acknowledged) is left out. Nothing is written.
 */
async function replayJournals(root: string, fromGen: number, state: State): Promise<void> {
  const gens = (await readdir(root))
    .map((name) => /^journal-(\d+)\.jsonl$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .filter((gen) => gen >= fromGen)
    .sort((a, b) => a - b);
  for (const gen of gens) {
    for (const line of await readLines<{ s: number; o: Op[] }>(join(root, `journal-${gen}.jsonl`))) {
      if (!Array.isArray(line?.o)) throw new StoreCorruptError(join(root, `journal-${gen}.jsonl`), 'a line is not a journal entry');
      for (const op of line.o) state.apply(op);
    }
  }
}

/** JSON lines of a file; a torn final line (a crash mid-append) is left out, as the JSON store does. */
async function readLines<T>(path: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StoreCorruptError(path, (error as Error).message);
  }
  const lines = text.split('\n');
  const out: T[] = [];
  lines.forEach((line, i) => {
    if (!line) return;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      if (lines.slice(i + 1).some(Boolean)) throw new StoreCorruptError(path, `line ${i + 1} is not valid JSON`);
    }
  });
  return out;
}

type OutboxLine =
  | { t: 'e'; event: EventRecord; deliveries: DeliveryRecord[] }
  | { t: 'd'; delivery: DeliveryRecord }
  | { t: 'u'; id: string; state: DeliveryRecord['state']; attempts: number; next_attempt_at: number };

/** Replays a pre-journal outbox.jsonl: the deliveries still pending, with the events they came from. */
async function readLegacyOutbox(path: string): Promise<{ events: Map<string, EventRecord>; deliveries: Map<string, DeliveryRecord & { event_id: string | null }> }> {
  const events = new Map<string, EventRecord>();
  const pending = new Map<string, DeliveryRecord & { event_id: string | null }>();
  for (const line of await readLines<OutboxLine>(path)) {
    if (line.t === 'e') {
      events.set(line.event.id, line.event);
      for (const d of line.deliveries) pending.set(d.id, { ...d, event_id: line.event.id });
    } else if (line.t === 'd') {
      pending.set(line.delivery.id, { ...line.delivery, event_id: pending.get(line.delivery.id)?.event_id ?? null });
    } else if (line.t === 'u') {
      const d = pending.get(line.id);
      if (!d) continue;
      if (line.state !== 'pending') pending.delete(line.id);
      else Object.assign(d, { attempts: line.attempts, next_attempt_at: line.next_attempt_at });
    }
  }
  const referenced = new Set([...pending.values()].map((d) => d.event_id));
  for (const id of events.keys()) if (!referenced.has(id)) events.delete(id);
  return { events, deliveries: pending };
}

/** Each endpoint's newest entries, by the file name's endpoint id. */
async function readLogs(dir: string): Promise<DeliveryLogEntry[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StoreCorruptError(dir, (error as Error).message);
  }
  const entries: DeliveryLogEntry[] = [];
  // An endpoint's log is its file and, once that filled up, its previous segment (<id>.old.jsonl).
  const endpointIds = new Set(names.flatMap((n) => /^(\d+)(?:\.old)?\.jsonl$/.exec(n)?.[1] ?? []));
  for (const endpointId of [...endpointIds].map(Number)) {
    // The newest by id (a file's lines need not be in id order when a batch was appended at once).
    const lines = [...(await readLines<DeliveryLogEntry>(join(dir, `${endpointId}.old.jsonl`))), ...(await readLines<DeliveryLogEntry>(join(dir, `${endpointId}.jsonl`)))]
      .filter((e) => e && typeof e.id === 'number')
      .sort((a, b) => a.id - b.id);
    entries.push(...lines.slice(-LOG_RETENTION).map((e) => ({ ...e, endpoint_id: endpointId })));
  }
  return entries.sort((a, b) => a.id - b.id);
}

async function insertRows(client: pg.Client, table: string, columns: string[], rows: Record<string, unknown>[]): Promise<number> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK).map((row) => Object.fromEntries(columns.map((c) => [c, row[c] ?? null])));
    const list = columns.map((c) => `"${c}"`).join(', ');
    await client.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM json_populate_recordset(null::${table}, $1::json)`, [JSON.stringify(chunk)]);
  }
  return rows.length;
}

async function copy(
  client: pg.Client,
  data: StoreContent,
  events: Map<string, EventRecord>,
  deliveries: (DeliveryRecord & { event_id: string | null })[],
  logs: DeliveryLogEntry[],
  jwtSecret: string | null,
  jwtSecretName: string,
): Promise<ImportSummary> {
  let skipped = 0;
  const keep = <T>(rows: T[] | undefined, ok: (row: T) => boolean): T[] => {
    const kept = (rows ?? []).filter(ok);
    skipped += (rows ?? []).length - kept.length;
    return kept;
  };
  const users = data.users ?? [];
  const userIds = new Set(users.map((u) => u.id));
  const apiKeys = keep(data.api_keys, (k) => userIds.has(k.user_id));
  // At most one default per customer (the newest marked one), as the schema demands.
  const subscriptions = keep(data.subscriptions, (s) => userIds.has(s.customer_id));
  const defaults = new Map<number, number>();
  for (const s of subscriptions) if (s.is_default) defaults.set(s.customer_id, Math.max(defaults.get(s.customer_id) ?? 0, s.id));
  const subIds = new Set(subscriptions.map((s) => s.id));
  const sites = keep(data.sites, (s) => subIds.has(s.subscription_id));
  const webhooks = keep(data.webhooks, (w) => userIds.has(w.user_id));
  const hookIds = new Set(webhooks.map((w) => w.id));
  const resetTokens = keep(data.reset_tokens, (t) => userIds.has(t.user_id));
  const pending = keep(deliveries, (d) => hookIds.has(d.endpoint_id));
  const entries = keep(logs, (e) => hookIds.has(e.endpoint_id));

  const summary: ImportSummary = {
    users: await insertRows(client, 'users', ['id', 'email', 'name', 'role', 'password_hash', 'totp_secret', 'totp_pending_secret', 'two_factor_enabled', 'totp_last_step', 'password_changed_at', 'token_generation', 'created_at', 'updated_at'],
      users.map((u) => ({ ...u, two_factor_enabled: Boolean(u.two_factor_enabled), token_generation: u.token_generation ?? 0 }))),
    api_keys: await insertRows(client, 'api_keys', ['id', 'user_id', 'name', 'key_hash', 'key_prefix', 'last_used_at', 'expires_at', 'created_at'], apiKeys as never[]),
    subscriptions: await insertRows(client, 'subscriptions', ['id', 'customer_id', 'main_domain', 'is_default', 'status', 'created_at', 'updated_at'],
      subscriptions.map((s) => ({ ...s, is_default: defaults.get(s.customer_id) === s.id }))),
    sites: await insertRows(client, 'sites', ['id', 'subscription_id', 'domain', 'created_at'], sites as never[]),
    webhooks: await insertRows(client, 'webhooks', ['id', 'user_id', 'url', 'secret', 'events', 'active', 'created_at', 'updated_at', 'signature', 'health_reset_at', 'headers', 'previous_secret', 'previous_secret_expires_at', 'paused', 'retry_schedule', 'max_in_flight', 'rate_limit_per_second'],
      webhooks.map((w) => ({ ...w, paused: w.paused === true }))),
    reset_tokens: await insertRows(client, 'reset_tokens', ['id', 'user_id', 'token_hash', 'expires_at', 'used_at', 'created_at'], resetTokens as never[]),
    revoked_tokens: await insertRows(client, 'revoked_tokens', ['jti', 'expires_at'], data.revoked_tokens as never[]),
    limiter: await insertRows(client, 'limiter', ['key', 'count', 'window_start', 'locked_until'], (data.limiter ?? []) as never[]),
    settings: false,
    jwt_secret: false,
    events: await insertRows(client, 'events', ['id', 'event', 'owner_id', 'data', 'timestamp'], [...events.values()].map((e) => ({ ...e, data: e.data ?? {} }))),
    deliveries: await insertRows(client, 'deliveries', ['id', 'event_id', 'endpoint_id', 'owner_id', 'event', 'body', 'state', 'attempts', 'next_attempt_at', 'created_at', 'manual'], pending as never[]),
    log_entries: await insertRows(client, 'delivery_log', ['id', 'delivery_id', 'endpoint_id', 'event', 'payload', 'attempt', 'status_code', 'response', 'success', 'duration_ms', 'created_at', 'request_headers', 'extra'],
      entries.map((e) => ({ ...e, payload: e.payload === undefined ? null : e.payload, request_headers: e.request_headers ?? {}, extra: logExtra(e) }))),
    skipped,
  };
  // Each imported log's revision counts its entries, as the statements that write a log do
  // (the database was empty: no counter exists yet).
  await client.query('INSERT INTO delivery_log_revisions (endpoint_id, entries) SELECT endpoint_id, count(*) FROM delivery_log GROUP BY endpoint_id');
  if (data.settings && Object.keys(data.settings).length > 0) {
    await client.query('INSERT INTO settings (id, data) VALUES (1, $1::jsonb)', [JSON.stringify(data.settings)]);
    summary.settings = true;
  }
  if (jwtSecret) {
    await client.query('INSERT INTO shared_secrets (name, value) VALUES ($1, $2)', [jwtSecretName, jwtSecret]);
    summary.jwt_secret = true;
  }
  // New ids continue after the kept ones (and after the JSON store's counters: ids of deleted
  // records are not handed out again).
  const counters = data.counters ?? {};
  for (const table of ['users', 'api_keys', 'subscriptions', 'sites', 'webhooks', 'reset_tokens', 'delivery_log']) {
    // The JSON store's counter for log entries is `delivery_log`, like the table.
    await client.query(
      `SELECT setval(pg_get_serial_sequence('${table}', 'id'), v, v > 0)
       FROM (SELECT greatest((SELECT coalesce(max(id), 0) FROM ${table}), $1::bigint) AS v) m
       WHERE v > 0`,
      [counters[table] ?? 0],
    );
  }
  return summary;
}
