// The webhook outbox as a journal (outbox.jsonl): an event and its deliveries are one line,
// appended and fsynced before the publish is acknowledged; progress of each delivery is a
// further small line. Only pending deliveries are kept in memory, indexed per endpoint (new
// ones and retries in due order) so claiming the next one is O(1) whatever the backlog. The
// journal is rewritten (atomically) to just the pending deliveries when it grows, so it never
// grows without bound.
import { readFile, truncate } from 'node:fs/promises';
import type { OutboxClaim, OutboxRepository } from '../store.js';
import { StoreCorruptError } from '../store.js';
import type { DeliveryRecord, EventRecord } from '../types.js';
import { AppendLog } from './append-log.js';
import { atomicWrite } from './durable-writer.js';

type Line =
  | { t: 'e'; event: EventRecord; deliveries: DeliveryRecord[] }
  | { t: 'd'; delivery: DeliveryRecord }
  | { t: 'u'; id: string; state: DeliveryRecord['state']; attempts: number; next_attempt_at: number };

const COMPACT_AFTER_LINES = 20_000;

/** One endpoint's unclaimed pending deliveries, each map in due order (insertion order). */
interface Lane {
  fresh: Map<string, DeliveryRecord>;
  retries: Map<string, DeliveryRecord>;
}

function first<V>(map: Map<string, V>): V | undefined {
  for (const value of map.values()) return value;
  return undefined;
}

export class JsonOutbox implements OutboxRepository {
  readonly #pending = new Map<string, DeliveryRecord>();
  readonly #lanes = new Map<number, Lane>();
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
    const copies = deliveries.map((delivery) => ({ ...delivery }));
    for (const delivery of copies) this.#pending.set(delivery.id, delivery);
    try {
      await this.#append({ t: 'e', event, deliveries });
    } catch (error) {
      for (const delivery of copies) this.#pending.delete(delivery.id);
      throw error;
    }
    // Offered for claims only once durable, so nothing is attempted that could be lost.
    for (const delivery of copies) if (this.#pending.get(delivery.id) === delivery) this.#offer(delivery);
  }

  async updateDelivery(delivery: DeliveryRecord): Promise<void> {
    await this.#compacting;
    const current = this.#pending.get(delivery.id);
    if (!current) return;
    this.#withdraw(current);
    const next = { ...delivery };
    if (delivery.state === 'pending') this.#pending.set(delivery.id, next);
    else this.#pending.delete(delivery.id);
    try {
      // A pending retry is fsynced: its 2 s delay and the two-attempt limit must survive a
      // crash. A final outcome is only written: lost in a crash, the delivery is sent once more,
      // which at-least-once delivery allows (receivers deduplicate by X-Webhook-Delivery), and
      // publishes do not queue behind an fsync per attempt.
      await this.#append(
        { t: 'u', id: delivery.id, state: delivery.state, attempts: delivery.attempts, next_attempt_at: delivery.next_attempt_at },
        delivery.state === 'pending',
      );
    } catch (error) {
      // Not offered again in this process: the journal still holds the last durable state,
      // which is what a restart will retry, and a failing disk must not spin the dispatcher.
      this.#pending.set(delivery.id, current);
      throw error;
    }
    if (delivery.state === 'pending' && this.#pending.get(delivery.id) === next) this.#offer(next);
    if (this.#linesSinceCompact >= COMPACT_AFTER_LINES && !this.#compacting) void this.compact();
  }

  async claim(endpointId: number, now: number): Promise<OutboxClaim> {
    const lane = this.#lanes.get(endpointId);
    if (!lane) return { delivery: null, next_due_at: null };
    const retry = first(lane.retries);
    const fresh = first(lane.fresh);
    let pick: DeliveryRecord | undefined;
    if (retry && retry.next_attempt_at <= now) pick = retry;
    if (fresh && fresh.next_attempt_at <= now && (!pick || fresh.next_attempt_at < pick.next_attempt_at)) pick = fresh;
    if (!pick) {
      const times = [retry?.next_attempt_at, fresh?.next_attempt_at].filter((t): t is number => t !== undefined);
      return { delivery: null, next_due_at: times.length ? Math.min(...times) : null };
    }
    this.#withdraw(pick);
    return { delivery: { ...pick } };
  }

  async pendingEndpoints(): Promise<number[]> {
    return [...this.#lanes.keys()];
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

  /** Makes a pending delivery claimable (retries after new ones of equal age). */
  #offer(delivery: DeliveryRecord): void {
    let lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) {
      lane = { fresh: new Map(), retries: new Map() };
      this.#lanes.set(delivery.endpoint_id, lane);
    }
    (delivery.attempts > 0 ? lane.retries : lane.fresh).set(delivery.id, delivery);
  }

  /** Removes a delivery from its endpoint's claimable ones (claimed or finished). */
  #withdraw(delivery: DeliveryRecord): void {
    const lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) return;
    lane.fresh.delete(delivery.id);
    lane.retries.delete(delivery.id);
    if (lane.fresh.size === 0 && lane.retries.size === 0) this.#lanes.delete(delivery.endpoint_id);
  }

  async #append(line: Line, durable = true): Promise<void> {
    this.#linesSinceCompact++;
    await this.#log.append(JSON.stringify(line), durable);
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
    const due = [...this.#pending.values()].sort((a, b) => a.next_attempt_at - b.next_attempt_at);
    for (const delivery of due) this.#offer(delivery);
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
