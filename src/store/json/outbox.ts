// The webhook outbox as a journal (outbox.jsonl): an event and its deliveries are one line,
// appended and fsynced before the publish is acknowledged; progress of each delivery is a
// further small line. Only pending deliveries are kept in memory. The journal is rewritten
// (atomically) to just the pending deliveries when it grows, so it never grows without bound.
import { readFile, truncate } from 'node:fs/promises';
import type { OutboxRepository } from '../store.js';
import { StoreCorruptError } from '../store.js';
import type { DeliveryRecord, EventRecord } from '../types.js';
import { AppendLog } from './append-log.js';
import { atomicWrite } from './durable-writer.js';

type Line =
  | { t: 'e'; event: EventRecord; deliveries: DeliveryRecord[] }
  | { t: 'd'; delivery: DeliveryRecord }
  | { t: 'u'; id: string; state: DeliveryRecord['state']; attempts: number; next_attempt_at: number };

const COMPACT_AFTER_LINES = 20_000;

export class JsonOutbox implements OutboxRepository {
  readonly #pending = new Map<string, DeliveryRecord>();
  readonly #log: AppendLog;
  #linesSinceCompact = 0;
  #compacting: Promise<void> | null = null;

  private constructor(readonly path: string) {
    this.#log = new AppendLog(path, true);
  }

  static async open(path: string): Promise<JsonOutbox> {
    const outbox = new JsonOutbox(path);
    await outbox.#load();
    return outbox;
  }

  async enqueue(event: EventRecord, deliveries: DeliveryRecord[]): Promise<void> {
    await this.#compacting;
    for (const delivery of deliveries) this.#pending.set(delivery.id, { ...delivery });
    try {
      await this.#append({ t: 'e', event, deliveries });
    } catch (error) {
      for (const delivery of deliveries) this.#pending.delete(delivery.id);
      throw error;
    }
  }

  async updateDelivery(delivery: DeliveryRecord): Promise<void> {
    await this.#compacting;
    const current = this.#pending.get(delivery.id);
    if (delivery.state === 'pending') this.#pending.set(delivery.id, { ...delivery });
    else this.#pending.delete(delivery.id);
    try {
      await this.#append({
        t: 'u',
        id: delivery.id,
        state: delivery.state,
        attempts: delivery.attempts,
        next_attempt_at: delivery.next_attempt_at,
      });
    } catch (error) {
      if (current) this.#pending.set(delivery.id, current);
      else this.#pending.delete(delivery.id);
      throw error;
    }
    if (this.#linesSinceCompact >= COMPACT_AFTER_LINES && !this.#compacting) void this.compact();
  }

  async pending(): Promise<DeliveryRecord[]> {
    return [...this.#pending.values()].map((d) => ({ ...d }));
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Rewrites the journal to the pending deliveries only. */
  compact(): Promise<void> {
    if (this.#compacting) return this.#compacting;
    this.#compacting = (async () => {
      await this.#log.idle();
      const lines = [...this.#pending.values()].map((delivery) => JSON.stringify({ t: 'd', delivery } satisfies Line));
      await atomicWrite(this.path, lines.length ? lines.join('\n') + '\n' : '', 0o600);
      await this.#log.reopen();
      this.#linesSinceCompact = 0;
    })().finally(() => {
      this.#compacting = null;
    });
    return this.#compacting;
  }

  async close(): Promise<void> {
    await this.#compacting;
    await this.#log.close();
  }

  async #append(line: Line): Promise<void> {
    this.#linesSinceCompact++;
    await this.#log.append(JSON.stringify(line));
  }

  async #load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new StoreCorruptError(this.path, (error as Error).message);
    }
    const lines = text.split('\n');
    let goodBytes = 0;
    for (let i = 0; i < lines.length; i++) {
      const raw = lines[i];
      const isLast = i === lines.length - 1;
      if (raw === '') {
        goodBytes += isLast ? 0 : 1;
        continue;
      }
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        // A torn final line is a write that was never acknowledged: cut it off.
        if (isLast || lines.slice(i + 1).every((l) => l === '')) {
          await truncate(this.path, goodBytes);
          break;
        }
        throw new StoreCorruptError(this.path, `line ${i + 1} is not valid JSON`);
      }
      this.#apply(line);
      goodBytes += Buffer.byteLength(raw) + (isLast ? 0 : 1);
      this.#linesSinceCompact++;
    }
  }

  #apply(line: Line): void {
    if (line.t === 'e') {
      for (const delivery of line.deliveries) this.#pending.set(delivery.id, delivery);
    } else if (line.t === 'd') {
      this.#pending.set(line.delivery.id, line.delivery);
    } else if (line.t === 'u') {
      const delivery = this.#pending.get(line.id);
      if (!delivery) return;
      if (line.state !== 'pending') this.#pending.delete(line.id);
      else Object.assign(delivery, { attempts: line.attempts, next_attempt_at: line.next_attempt_at });
    }
  }
}
