// Claims of the JSON store's outbox: pending deliveries indexed per endpoint (a lane: new ones
// and retries, each in due order), with leases held in memory. One process owns a JSON store,
// so a lane never has to outlive it: after a crash every pending delivery is offered again,
// which is what an expired lease means.
//
// A claim is one walk over the due deliveries in due order (`next_attempt_at`, then creation):
// a merge of the lanes' heads, so an endpoint that has had its `perEndpoint` (or is skipped or
// paused) drops out of the walk instead of being passed over delivery by delivery.
import type { ClaimOptions } from '../store.js';
import type { Pending } from './outbox-table.js';

/** Sets of entries, not maps by id: an entry is replaced on every change, so its identity is its key. */
interface Lane {
  owner: number | null;
  fresh: Set<Pending>;
  /** In due order (kept so on insert: see #add). */
  retries: Set<Pending>;
  /** The latest due time a retry was added with: one added earlier than it re-sorts the set. */
  retriesUpTo: number;
}

interface Lease {
  owner: string;
  until: number;
}

/**
 * A lane in the claim's walk: its due, free deliveries in due order, `next` first. Its retries
 * are kept in due order, so their walk stops at the first not yet due; new deliveries are in
 * insertion order, which is due order for deliveries queued "now", and one queued for later is
 * passed over, not waited for. Plain iterators rather than generators: a claim steps through
 * every leased delivery at the head of each lane.
 */
class Cursor {
  next: Pending | undefined;
  taken = 0;
  readonly #retries: Iterator<Pending>;
  readonly #fresh: Iterator<Pending>;
  #retry: Pending | undefined;
  #new: Pending | undefined;

  constructor(
    lane: Lane,
    readonly now: number,
    readonly free: (id: string, now: number) => boolean,
  ) {
    this.#retries = lane.retries.values();
    this.#fresh = lane.fresh.values();
    this.#retry = this.#nextRetry();
    this.#new = this.#nextNew();
    this.advance();
  }

  /** Moves `next` to the lane's following due, free delivery (undefined: none left). */
  advance(): void {
    const retry = this.#retry;
    const fresh = this.#new;
    if (retry !== undefined && (fresh === undefined || before(retry, fresh))) {
      this.next = retry;
      this.#retry = this.#nextRetry();
    } else {
      this.next = fresh;
      if (fresh !== undefined) this.#new = this.#nextNew();
    }
  }

  #nextRetry(): Pending | undefined {
    for (let step = this.#retries.next(); !step.done; step = this.#retries.next()) {
      const delivery = step.value;
      // In due order: none after this one is due either.
      if (delivery.next_attempt_at > this.now) return undefined;
      if (this.free(delivery.id, this.now)) return delivery;
    }
    return undefined;
  }

  #nextNew(): Pending | undefined {
    for (let step = this.#fresh.next(); !step.done; step = this.#fresh.next()) {
      const delivery = step.value;
      if (delivery.next_attempt_at <= this.now && this.free(delivery.id, this.now)) return delivery;
    }
    return undefined;
  }
}

/** Due order: when due, then when published, then id (a stable order for equal times). */
function before(a: Pending, b: Pending): boolean {
  if (a.next_attempt_at !== b.next_attempt_at) return a.next_attempt_at < b.next_attempt_at;
  if (a.group.created_at !== b.group.created_at) return a.group.created_at < b.group.created_at;
  return a.id < b.id;
}

export class OutboxLanes {
  readonly #lanes = new Map<number, Lane>();
  readonly #leases = new Map<string, Lease>();
  /**
   * New deliveries whose transaction is in memory but not yet on disk: nobody may claim them,
   * since a failed journal write rolls them back and nothing may leave for a change that was
   * never saved (see withhold, admit).
   */
  readonly #uncommitted = new Set<string>();

  /** Keeps the lanes in step with the deliveries table (put, delete, undo and replay alike). */
  onChange = (previous: Pending | undefined, next: Pending | undefined): void => {
    if (previous) this.#remove(previous);
    if (next) this.#add(next);
    if (!next && previous) {
      this.#leases.delete(previous.id);
      this.#uncommitted.delete(previous.id);
    }
  };

  /** Keeps new deliveries from every claim until their commit is durable (or rolled back, which removes them). */
  withhold(ids: readonly string[]): void {
    for (const id of ids) this.#uncommitted.add(id);
  }

  /** The deliveries' commit is on disk: claimable from now on. */
  admit(ids: readonly string[]): void {
    for (const id of ids) this.#uncommitted.delete(id);
  }

  /** `paused(endpoint)`: that endpoint's lane is left out of the walk (not of a claim by ids: a manual send). */
  claim(options: ClaimOptions, lookup: (id: string) => Pending | undefined, paused: (endpointId: number) => boolean = () => false): Pending[] {
    const { now, limit } = options;
    const taken: Pending[] = [];
    if (limit <= 0) return taken;
    if (options.ids) {
      for (const id of options.ids) {
        const delivery = lookup(id);
        if (delivery && delivery.next_attempt_at <= now && this.#free(id, now)) taken.push(delivery);
        if (taken.length >= limit) break;
      }
    } else this.#walk(options, taken, paused);
    for (const delivery of taken) this.#leases.set(delivery.id, { owner: options.owner, until: now + options.leaseMs });
    return taken;
  }

  /** An endpoint's pending deliveries. */
  ofEndpoint(endpointId: number): Pending[] {
    const lane = this.#lanes.get(endpointId);
    return lane ? [...lane.retries.values(), ...lane.fresh.values()] : [];
  }

  /** Whether `owner` holds the delivery's lease (live or ended but not taken by another). */
  holds(owner: string, id: string): boolean {
    return this.#leases.get(id)?.owner === owner;
  }

  release(owner: string, id: string): void {
    if (this.holds(owner, id)) this.#leases.delete(id);
  }

  /** How many deliveries the endpoint has pending. */
  pendingOf(endpointId: number): number {
    const lane = this.#lanes.get(endpointId);
    return lane ? lane.retries.size + lane.fresh.size : 0;
  }

  nextDueAt(paused: (endpointId: number) => boolean = () => false): number | null {
    let next: number | null = null;
    for (const [endpointId, lane] of this.#lanes) {
      if (paused(endpointId)) continue;
      for (const map of [lane.retries, lane.fresh]) {
        for (const delivery of map) {
          if (next === null || delivery.next_attempt_at < next) next = delivery.next_attempt_at;
          break;
        }
      }
    }
    return next;
  }

  /** When the endpoint's first retry is due (its retries are kept in due order); null without one. */
  nextRetryAt(endpointId: number): number | null {
    const lane = this.#lanes.get(endpointId);
    if (lane) for (const delivery of lane.retries) return delivery.next_attempt_at;
    return null;
  }

  clear(): void {
    this.#lanes.clear();
    this.#leases.clear();
    this.#uncommitted.clear();
  }

  /**
   * The claim's walk: the lanes not skipped enter with their first due, free delivery; the
   * earliest is taken and its lane moves on, until `limit` are taken or every lane has had its
   * `perEndpoint` or run out. A binary heap keeps the lanes by their next delivery.
   */
  #walk(options: ClaimOptions, taken: Pending[], paused: (endpointId: number) => boolean): void {
    const { now, limit, perEndpoint } = options;
    if (perEndpoint <= 0) return;
    const skipEndpoints = new Set(options.skipEndpoints ?? []);
    const skipOwners = new Set(options.skipOwners ?? []);
    const free = this.#isFree;
    const heap: Cursor[] = [];
    for (const [endpointId, lane] of this.#lanes) {
      if (skipEndpoints.has(endpointId) || (lane.owner !== null && skipOwners.has(lane.owner)) || paused(endpointId)) continue;
      const cursor = new Cursor(lane, now, free);
      if (cursor.next !== undefined) heapPush(heap, cursor);
    }
    while (heap.length > 0 && taken.length < limit) {
      const cursor = heap[0];
      taken.push(cursor.next!);
      cursor.taken++;
      if (cursor.taken < perEndpoint) cursor.advance();
      else cursor.next = undefined;
      if (cursor.next === undefined) heapPop(heap);
      else siftDown(heap, 0);
    }
  }

  readonly #isFree = (id: string, now: number): boolean => this.#free(id, now);

  #free(id: string, now: number): boolean {
    if (this.#uncommitted.size > 0 && this.#uncommitted.has(id)) return false;
    const lease = this.#leases.get(id);
    return !lease || lease.until <= now;
  }

  #add(delivery: Pending): void {
    let lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) {
      lane = { owner: delivery.owner_id, fresh: new Set(), retries: new Set(), retriesUpTo: 0 };
      this.#lanes.set(delivery.endpoint_id, lane);
    }
    if (delivery.attempts === 0) {
      lane.fresh.add(delivery);
      return;
    }
    lane.retries.add(delivery);
    // Retries made a fixed delay after their attempts arrive in due order; one due earlier than
    // an earlier-added one (a schedule of different delays, a replay) puts the set back in order.
    if (delivery.next_attempt_at < lane.retriesUpTo) lane.retries = new Set([...lane.retries].sort((a, b) => (before(a, b) ? -1 : 1)));
    else lane.retriesUpTo = delivery.next_attempt_at;
  }

  #remove(delivery: Pending): void {
    const lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) return;
    lane.fresh.delete(delivery);
    lane.retries.delete(delivery);
    if (lane.fresh.size === 0 && lane.retries.size === 0) this.#lanes.delete(delivery.endpoint_id);
  }
}

function heapPush(heap: Cursor[], cursor: Cursor): void {
  heap.push(cursor);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i].next!, heap[parent].next!)) break;
    [heap[i], heap[parent]] = [heap[parent], heap[i]];
    i = parent;
  }
}

function heapPop(heap: Cursor[]): void {
  const last = heap.pop()!;
  if (heap.length === 0) return;
  heap[0] = last;
  siftDown(heap, 0);
}

function siftDown(heap: Cursor[], i: number): void {
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let least = i;
    if (left < heap.length && before(heap[left].next!, heap[least].next!)) least = left;
    if (right < heap.length && before(heap[right].next!, heap[least].next!)) least = right;
    if (least === i) return;
    [heap[i], heap[least]] = [heap[least], heap[i]];
    i = least;
  }
}
