// In-memory tables of the JSON store: records by key, with unique and grouping indexes kept in
// step on every put and delete. Records are frozen: a change replaces the record, so a reader
// holding one never sees it change underneath, and a caller cannot change the store by mistake.

type Key = string | number;

interface UniqueIndex<T> {
  key: (record: T) => string | null;
  map: Map<string, T>;
}

interface GroupIndex<T> {
  key: (record: T) => Key | null;
  map: Map<Key, Map<Key, T>>;
}

export class Table<T extends object, K extends Key = number> {
  readonly rows = new Map<K, T>();
  readonly #unique = new Map<string, UniqueIndex<T>>();
  readonly #groups = new Map<string, GroupIndex<T>>();
  /** Told of every change (derived indexes kept outside the table, such as outbox lanes). */
  onChange: ((previous: T | undefined, next: T | undefined) => void) | null = null;

  constructor(
    readonly keyOf: (record: T) => K,
    /** Freeze records on put (off for the outbox: hundreds of thousands of internal records). */
    private readonly freeze = true,
  ) {}

  /** Declares a unique index (null keys are not indexed). */
  unique(name: string, key: (record: T) => string | null): this {
    this.#unique.set(name, { key, map: new Map() });
    return this;
  }

  /** Declares a grouping index: records by a shared value (a foreign key). */
  group(name: string, key: (record: T) => Key | null): this {
    this.#groups.set(name, { key, map: new Map() });
    return this;
  }

  get(key: K): T | undefined {
    return this.rows.get(key);
  }

  byUnique(index: string, value: string): T | undefined {
    return this.#unique.get(index)!.map.get(value);
  }

  /** The records sharing `value` in a grouping index, in insertion order. */
  byGroup(index: string, value: Key): T[] {
    const group = this.#groups.get(index)!.map.get(value);
    return group ? [...group.values()] : [];
  }

  values(): T[] {
    return [...this.rows.values()];
  }

  get size(): number {
    return this.rows.size;
  }

  /** Inserts or replaces; answers the previous record. */
  put(record: T): T | undefined {
    if (this.freeze) Object.freeze(record);
    const key = this.keyOf(record);
    const previous = this.rows.get(key);
    this.rows.set(key, record);
    // A table without indexes (the request windows, written on every API request) skips the walk.
    if (this.#unique.size + this.#groups.size > 0) {
      if (previous) this.#unindex(previous);
      this.#index(record);
    }
    this.onChange?.(previous, record);
    return previous;
  }

  delete(key: K): T | undefined {
    const previous = this.rows.get(key);
    if (!previous) return undefined;
    this.rows.delete(key);
    this.#unindex(previous);
    this.onChange?.(previous, undefined);
    return previous;
  }

  clear(): void {
    this.rows.clear();
    for (const index of this.#unique.values()) index.map.clear();
    for (const index of this.#groups.values()) index.map.clear();
  }

  #index(record: T): void {
    const key = this.keyOf(record);
    for (const index of this.#unique.values()) {
      const value = index.key(record);
      if (value !== null) index.map.set(value, record);
    }
    for (const index of this.#groups.values()) {
      const value = index.key(record);
      if (value === null) continue;
      let group = index.map.get(value);
      if (!group) index.map.set(value, (group = new Map()));
      group.set(key, record);
    }
  }

  #unindex(record: T): void {
    const key = this.keyOf(record);
    for (const index of this.#unique.values()) {
      const value = index.key(record);
      if (value !== null && index.map.get(value) === record) index.map.delete(value);
    }
    for (const index of this.#groups.values()) {
      const value = index.key(record);
      if (value === null) continue;
      const group = index.map.get(value);
      group?.delete(key);
      if (group?.size === 0) index.map.delete(value);
    }
  }
}
