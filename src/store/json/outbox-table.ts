// The JSON store's pending deliveries in memory, compactly: a delivery is a small entry (id,
// endpoint, owner, attempts, when due) pointing at its event's shared part (body, event name,
// creation time), so an event sent to 200 endpoints holds its body and strings once, and a
// DeliveryRecord is made only when one leaves the store (claimed, looked up). The snapshot
// writes them the same way: per event, its shared part once and the deliveries by column.
import type { DeliveryRecord } from '../types.js';

/** What the deliveries of one event share. */
export class PendingGroup {
  constructor(
    readonly body: string,
    readonly event: string,
    readonly created_at: string,
    readonly manual: boolean | undefined,
  ) {}

  fits(record: Omit<DeliveryRecord, 'body' | 'id'>, body: string): boolean {
    return this.body === body && this.event === record.event && this.created_at === record.created_at && this.manual === record.manual;
  }
}

/** One pending delivery (entries are replaced, never changed: the lanes index them by identity). */
export class Pending {
  constructor(
    readonly id: string,
    readonly endpoint_id: number,
    readonly owner_id: number | null,
    readonly attempts: number,
    readonly next_attempt_at: number,
    readonly group: PendingGroup,
  ) {}

  record(): DeliveryRecord {
    const { group } = this;
    const record: DeliveryRecord = {
      id: this.id,
      endpoint_id: this.endpoint_id,
      owner_id: this.owner_id,
      event: group.event,
      body: group.body,
      state: 'pending',
      attempts: this.attempts,
      next_attempt_at: this.next_attempt_at,
      created_at: group.created_at,
    };
    if (group.manual !== undefined) record.manual = group.manual;
    return record;
  }
}

/** A column of the snapshot: one value per delivery, or one value for all when they agree. */
type Column<T> = T | T[];

/**
 * The deliveries of one event in the snapshot, by column: parsing makes the id strings and a
 * few arrays, not an object per delivery (at 400,000 that garbage was most of the start-up).
 */
export interface PendingSnapshotGroup {
  body: string;
  event: string;
  created_at: string;
  manual?: boolean;
  ids: string[];
  endpoint: Column<number>;
  owner: Column<number | null>;
  attempts: Column<number>;
  due: Column<number>;
}

const at = <T>(column: Column<T>, i: number): T => (Array.isArray(column) ? column[i] : column);

function column<T>(entries: Pending[], value: (entry: Pending) => T): Column<T> {
  const first = value(entries[0]);
  return entries.every((entry) => value(entry) === first) ? first : entries.map(value);
}

/**
 * Pending deliveries by id, with the same put/delete/get surface as the other tables (so
 * journal operations, undo and replay treat them alike), answering and taking DeliveryRecords.
 * Only pending deliveries are held: putting one in another state removes it.
 */
export class DeliveryTable {
  readonly rows = new Map<string, Pending>();
  /** Told of every change (the outbox lanes). */
  onChange: ((previous: Pending | undefined, next: Pending | undefined) => void) | null = null;

  keyOf(record: DeliveryRecord): string {
    return record.id;
  }

  get(id: string): DeliveryRecord | undefined {
    return this.rows.get(id)?.record();
  }

  entry(id: string): Pending | undefined {
    return this.rows.get(id);
  }

  has(id: string): boolean {
    return this.rows.has(id);
  }

  get size(): number {
    return this.rows.size;
  }

  /**
   * When the oldest pending delivery was published (epoch ms), or null: one pass over the
   * entries, comparing once per event (an event's deliveries share their group and sit together).
   */
  oldestCreatedAt(): number | null {
    let oldest: string | null = null;
    let last: PendingGroup | null = null;
    for (const entry of this.rows.values()) {
      if (entry.group === last) continue;
      last = entry.group;
      if (oldest === null || entry.group.created_at < oldest) oldest = entry.group.created_at;
    }
    return oldest === null ? null : Date.parse(oldest);
  }

  /** Every pending delivery as a record (the PostgreSQL import; not for the daemon's paths). */
  values(): DeliveryRecord[] {
    return Array.from(this.rows.values(), (entry) => entry.record());
  }

  /** Inserts or replaces; answers the previous record. */
  put(record: DeliveryRecord): DeliveryRecord | undefined {
    if (record.state !== 'pending') return this.delete(record.id);
    const previous = this.rows.get(record.id);
    // A retry keeps its event's shared part.
    const group = previous?.group.fits(record, record.body)
      ? previous.group
      : new PendingGroup(record.body, record.event, record.created_at, record.manual);
    this.#set(entryOf(record, group), previous);
    return previous?.record();
  }

  /** Inserts the deliveries of one body, sharing one group per event. */
  add(body: string, records: Array<Omit<DeliveryRecord, 'body'>>): void {
    const groups: PendingGroup[] = [];
    for (const record of records) {
      if (record.state !== 'pending') {
        this.delete(record.id);
        continue;
      }
      let group = groups.find((g) => g.fits(record, body));
      if (!group) groups.push((group = new PendingGroup(body, record.event, record.created_at, record.manual)));
      this.#set(entryOf(record, group), this.rows.get(record.id));
    }
  }

  delete(id: string): DeliveryRecord | undefined {
    return this.take(id)?.record();
  }

  /** Removes a delivery and answers its entry as it was (for `restore`), without making a record of it. */
  take(id: string): Pending | undefined {
    const previous = this.rows.get(id);
    if (!previous) return undefined;
    this.rows.delete(id);
    this.onChange?.(previous, undefined);
    return previous;
  }

  /** Puts back an entry `take` removed (a rollback). */
  restore(entry: Pending): void {
    this.#set(entry, this.rows.get(entry.id));
  }

  clear(): void {
    this.rows.clear();
  }

  /** Loads the snapshot's groups. */
  load(groups: PendingSnapshotGroup[]): void {
    for (const g of groups) {
      const group = new PendingGroup(g.body, g.event, g.created_at, g.manual);
      const { ids, endpoint, owner, attempts, due } = g;
      for (let i = 0; i < ids.length; i++) {
        this.#set(new Pending(ids[i], at(endpoint, i), at(owner, i), at(attempts, i), at(due, i), group), this.rows.get(ids[i]));
      }
    }
  }

  /** The snapshot's groups: deliveries sharing a group's fields written under it once. */
  snapshot(): PendingSnapshotGroup[] {
    const byGroup = new Map<PendingGroup, Pending[]>();
    for (const entry of this.rows.values()) {
      const entries = byGroup.get(entry.group);
      if (entries) entries.push(entry);
      else byGroup.set(entry.group, [entry]);
    }
    // Equal groups made apart (an undone delete, deliveries from an older layout) are merged.
    const merged = new Map<string, { group: PendingGroup; entries: Pending[] }>();
    for (const [group, entries] of byGroup) {
      const key = `${group.event}\n${group.created_at}\n${group.manual}\n${group.body}`;
      const into = merged.get(key);
      if (into) for (const entry of entries) into.entries.push(entry);
      else merged.set(key, { group, entries });
    }
    return Array.from(merged.values(), ({ group, entries }) => {
      const out: PendingSnapshotGroup = {
        body: group.body,
        event: group.event,
        created_at: group.created_at,
        ids: entries.map((e) => e.id),
        endpoint: column(entries, (e) => e.endpoint_id),
        owner: column(entries, (e) => e.owner_id),
        attempts: column(entries, (e) => e.attempts),
        due: column(entries, (e) => e.next_attempt_at),
      };
      if (group.manual !== undefined) out.manual = group.manual;
      return out;
    });
  }

  #set(entry: Pending, previous: Pending | undefined): void {
    this.rows.set(entry.id, entry);
    this.onChange?.(previous, entry);
  }
}

function entryOf(record: Omit<DeliveryRecord, 'body'>, group: PendingGroup): Pending {
  return new Pending(record.id, record.endpoint_id, record.owner_id ?? null, record.attempts, record.next_attempt_at, group);
}
