// The JSON store's snapshot (store.json): the state as of the start of one journal generation.
// Read once at open (migrated to the current schema, and a store written before the journal
// carried over from its outbox.jsonl), rewritten atomically by each compaction.
import { readFile } from 'node:fs/promises';
import { Low, type Adapter } from 'lowdb';
import type { DataLayout } from '../../shared/paths.js';
import { migrate } from '../migrations.js';
import { StoreCorruptError } from '../store.js';
import type { DeliveryRecord } from '../types.js';
import { replaceFile, type FileOps } from './file-ops.js';
import { State, type Snapshot } from './state.js';

/**
 * lowdb adapter for the snapshot document: strict reads (a file that cannot be read is an
 * error, never replaced) and byte-checked atomic writes. The document is kept as its JSON text:
 * it is serialised under the store's lock, in one go, at a consistent point.
 */
class SnapshotAdapter implements Adapter<string | null> {
  constructor(
    readonly path: string,
    private readonly ops: FileOps,
  ) {}

  async read(): Promise<string | null> {
    try {
      return await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreCorruptError(this.path, (error as Error).message);
    }
  }

  async write(text: string | null): Promise<void> {
    if (text !== null) await replaceFile(this.ops, this.path, text, 0o600);
  }
}

/**
 * The snapshot file, written whole (temp file, fsync, rename, directory fsync).
 * @example
 * const file = new SnapshotFile(paths.store, realFileOps);
 * await file.write(state.snapshot(SCHEMA_VERSION, gen));
 */
export class SnapshotFile {
  readonly #file: Low<string | null>;

  constructor(path: string, ops: FileOps) {
    this.#file = new Low<string | null>(new SnapshotAdapter(path, ops), null);
  }

  /** The file's text, or null when there is none. */
  async read(): Promise<string | null> {
    await this.#file.read();
    const text = this.#file.data;
    // Not kept: the snapshot's text is as large as the store.
    this.#file.data = null;
    return text;
  }

  async write(text: string): Promise<void> {
    this.#file.data = text;
    try {
      await this.#file.write();
    } finally {
      this.#file.data = null;
    }
  }
}

/** What `loadSnapshot` read: the state to replay the journals onto, from generation `gen`. */
export interface LoadedSnapshot {
  state: State;
  file: SnapshotFile;
  /** The first journal generation the snapshot does not contain. */
  gen: number;
  /** The snapshot's size (compaction waits until the journal outgrows it). */
  bytes: number;
  /** The snapshot must be rewritten (new, migrated, or carried over from the old layout). */
  rewrite: boolean;
}

/**
 * Reads and migrates the snapshot of a data directory into a fresh State. Without `create`, a
 * missing snapshot is an error; `readOnly` never asks for a rewrite.
 * @example
 * const { state, gen } = await loadSnapshot(layout('/var/lib/panelctl'), realFileOps, {});
 */
export async function loadSnapshot(paths: DataLayout, ops: FileOps, options: { create?: boolean; readOnly?: boolean }): Promise<LoadedSnapshot> {
  const file = new SnapshotFile(paths.store, ops);
  const text = await file.read();
  if (text === null && !options.create) throw new StoreCorruptError(paths.store, 'the file does not exist (run `panelctl init`)');
  let doc: Record<string, unknown> = {};
  if (text !== null) {
    try {
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new StoreCorruptError(paths.store, `not valid JSON (${(error as Error).message})`);
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new StoreCorruptError(paths.store, 'not a JSON object');
  }
  let rewrite = text === null;
  try {
    rewrite = migrate(doc) || rewrite;
  } catch (error) {
    throw new StoreCorruptError(paths.store, (error as Error).message);
  }
  const state = new State();
  state.load(doc as unknown as Snapshot);
  // Stores written before the journal kept the outbox in outbox.jsonl.
  if (typeof doc.journal_gen !== 'number') {
    await loadLegacyOutbox(paths, state);
    rewrite = true;
  }
  const gen = typeof doc.journal_gen === 'number' ? doc.journal_gen : 1;
  // Read-only: a migrated document stays in memory only (the daemon owning the files migrates them).
  return { state, file, gen, bytes: text?.length ?? 0, rewrite: rewrite && !options.readOnly };
}

/** Reads the pending deliveries of a store written before the journal (outbox.jsonl). */
async function loadLegacyOutbox(paths: DataLayout, state: State): Promise<void> {
  let text: string;
  try {
    text = await readFile(paths.outbox, 'utf8');
  } catch {
    return;
  }
  const pending = new Map<string, DeliveryRecord>();
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    let line: { t: string; deliveries?: DeliveryRecord[]; delivery?: DeliveryRecord; id?: string; state?: string; attempts?: number; next_attempt_at?: number };
    try {
      line = JSON.parse(raw);
    } catch {
      continue; // a torn last line: never acknowledged
    }
    if (line.t === 'e') for (const d of line.deliveries ?? []) pending.set(d.id, d);
    else if (line.t === 'd' && line.delivery) pending.set(line.delivery.id, line.delivery);
    else if (line.t === 'u' && line.id) {
      const d = pending.get(line.id);
      if (!d) continue;
      if (line.state !== 'pending') pending.delete(line.id);
      else pending.set(line.id, { ...d, attempts: line.attempts ?? d.attempts, next_attempt_at: line.next_attempt_at ?? d.next_attempt_at });
    }
  }
  for (const d of pending.values()) {
    state.deliveries.put({ ...d, owner_id: d.owner_id ?? state.webhooks.get(d.endpoint_id)?.user_id ?? null });
  }
}
