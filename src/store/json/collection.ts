// One collection of the JSON store: an array in the lowdb document plus in-memory indexes.
// A mutation changes memory first, then awaits the durable write; if the write fails the
// change is rolled back, so nothing is answered as done that is not on disk.
import type { NewRecord, Repository } from '../store.js';

export interface CollectionHost {
  /** Resolves once the whole document is on disk. */
  commit(): Promise<void>;
  nextId(collection: string): number;
}

type IndexFn<T> = (record: T) => string;

export class JsonCollection<T extends { id: number }> implements Repository<T> {
  readonly #byId = new Map<number, T>();
  readonly #indexes = new Map<string, { fn: IndexFn<T>; map: Map<string, T> }>();
  #revision = 0;

  constructor(
    private readonly host: CollectionHost,
    private readonly name: string,
    private readonly rows: () => T[],
    indexes: Record<string, IndexFn<T>> = {},
  ) {
    for (const [key, fn] of Object.entries(indexes)) this.#indexes.set(key, { fn, map: new Map() });
    for (const row of rows()) this.#indexRow(row);
  }

  /** O(1) lookup through a unique index declared at construction. */
  lookup(index: string, key: string): T | undefined {
    return this.#indexes.get(index)?.map.get(key);
  }

  async get(id: number): Promise<T | undefined> {
    return this.#byId.get(id);
  }

  getSync(id: number): T | undefined {
    return this.#byId.get(id);
  }

  async list(filter?: (record: T) => boolean): Promise<T[]> {
    return filter ? this.rows().filter(filter) : [...this.rows()];
  }

  async find(filter: (record: T) => boolean): Promise<T | undefined> {
    return this.rows().find(filter);
  }

  async count(): Promise<number> {
    return this.rows().length;
  }

  revision(): number {
    return this.#revision;
  }

  async insert(record: NewRecord<T>): Promise<T> {
    const row = { id: this.host.nextId(this.name), ...record } as T;
    this.rows().push(row);
    this.#indexRow(row);
    await this.#commit(() => this.#detach(row));
    return row;
  }

  async update(id: number, patch: Partial<NewRecord<T>>): Promise<T | undefined> {
    const row = this.#byId.get(id);
    if (!row) return undefined;
    const before = { ...row };
    this.#unindexRow(row);
    Object.assign(row, patch, { id });
    this.#indexRow(row);
    await this.#commit(() => {
      this.#unindexRow(row);
      Object.assign(row, before);
      this.#indexRow(row);
    });
    return row;
  }

  async remove(id: number): Promise<T | undefined> {
    const row = this.#byId.get(id);
    if (!row) return undefined;
    const position = this.rows().indexOf(row);
    this.#detach(row);
    await this.#commit(() => {
      this.rows().splice(Math.min(position, this.rows().length), 0, row);
      this.#indexRow(row);
    });
    return row;
  }

  /** Removes rows from memory without committing; the caller commits (cascades). */
  detachWhere(filter: (record: T) => boolean): T[] {
    const removed = this.rows().filter(filter);
    for (const row of removed) this.#detach(row);
    return removed;
  }

  /** Puts rows back after a failed cascade commit. */
  reattach(rows: T[]): void {
    for (const row of rows) {
      this.rows().push(row);
      this.#indexRow(row);
    }
  }

  async #commit(rollback: () => void): Promise<void> {
    try {
      await this.host.commit();
    } catch (error) {
      rollback();
      throw error;
    }
  }

  #detach(row: T): void {
    const rows = this.rows();
    const position = rows.indexOf(row);
    if (position >= 0) rows.splice(position, 1);
    this.#unindexRow(row);
  }

  // Every insert, update, removal, cascade and rollback passes through these two.
  #indexRow(row: T): void {
    this.#revision++;
    this.#byId.set(row.id, row);
    for (const { fn, map } of this.#indexes.values()) map.set(fn(row), row);
  }

  #unindexRow(row: T): void {
    this.#revision++;
    this.#byId.delete(row.id);
    for (const { fn, map } of this.#indexes.values()) {
      const key = fn(row);
      if (map.get(key) === row) map.delete(key);
    }
  }
}
