// Claims of the JSON store's outbox: pending deliveries indexed per endpoint (a lane: new ones
// and retries, each in due order), with leases held in memory. One process owns a JSON store,
// so a lane never has to outlive it: after a crash every pending delivery is offered again,
// which is what an expired lease means.
//
// A claim is one walk over the due deliveries in due order (`next_attempt_at`, then creation):
// a merge of the lanes' heads, so an endpoint that has had its `perEndpoint` (or is skipped or
// paused) drops out of the walk instead of being passed over delivery by delivery. A claimed
// delivery leaves its lane's walk while its lease runs (the walk would otherwise step over every
// delivery held by the dispatcher, at every claim): it comes back when it is handed back or its
// lease ends, and goes when its outcome is recorded.
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
  /** Claimed and leased: out of the walk. */
  leased: Set<Pending>;
  /** No lease of `leased` ends before this (lowered as leases are given, raised when they are looked at). */
  leasedUntil: number;
  /** Handed back, or their lease ended: in the walk again, in due order. */
  returned: Set<Pending>;
}

interface Lease {
  owner: string;
  until: number;
  /** The entry leased (its lane's `leased` holds it unless it was replaced meanwhile). */
  entry: Pending;
}

/**
 * A lane in the claim's walk: its due, free deliveries in due order, `next` first, merged from
 * its three sets. Retries and returned deliveries are kept in due order, so their walk stops at
 * the first not yet due; new deliveries are in insertion order, which is due order for
 * deliveries queued "now", and one queued for later is passed over, not waited for.
 */
class Cursor {
  next: Pending | undefined;
  taken = 0;
  readonly #retries: Iterator<Pending>;
  readonly #returned: Iterator<Pending>;
  readonly #fresh: Iterator<Pending>;
  #retry: Pending | undefined;
  #back: Pending | undefined;
  #new: Pending | undefined;

  constructor(
    lane: Lane,
    readonly now: number,
    readonly free: (id: string, now: number) => boolean,
  ) {
    this.#retries = lane.retries.values();
    this.#returned = lane.returned.values();
    this.#fresh = lane.fresh.values();
    this.#retry = this.#nextInOrder(this.#retries);
    this.#back = lane.returned.size > 0 ? this.#nextInOrder(this.#returned) : undefined;
    this.#new = this.#nextNew();
    this.advance();
  }

  /** Moves `next` to the lane's following due, free delivery (undefined: none left). */
  advance(): void {
    let next = this.#retry;
    let from = 0;
    if (this.#back !== undefined && (next === undefined || before(this.#back, next))) {
      next = this.#back;
      from = 1;
    }
    if (this.#new !== undefined && (next === undefined || before(this.#new, next))) {
      next = this.#new;
      from = 2;
    }
    this.next = next;
    if (next === undefined) return;
    if (from === 0) this.#retry = this.#nextInOrder(this.#retries);
    else if (from === 1) this.#back = this.#nextInOrder(this.#returned);
    else this.#new = this.#nextNew();
  }

  /** The next due, free delivery of a set kept in due order. */
  #nextInOrder(set: Iterator<Pending>): Pending | undefined {
    for (let step = set.next(); !step.done; step = set.next()) {
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
    const until = now + options.leaseMs;
    for (const delivery of taken) {
      this.#leases.set(delivery.id, { owner: options.owner, until, entry: delivery });
      const lane = this.#lanes.get(delivery.endpoint_id);
      if (!lane) continue;
      lane.fresh.delete(delivery);
      lane.retries.delete(delivery);
      lane.returned.delete(delivery);
      lane.leased.add(delivery);
      if (until < lane.leasedUntil) lane.leasedUntil = until;
    }
    return taken;
  }

  /** An endpoint's pending deliveries. */
  ofEndpoint(endpointId: number): Pending[] {
    const lane = this.#lanes.get(endpointId);
    return lane ? [...lane.retries.values(), ...lane.returned.values(), ...lane.fresh.values(), ...lane.leased.values()] : [];
  }

  /** Whether `owner` holds the delivery's lease (live or ended but not taken by another). */
  holds(owner: string, id: string): boolean {
    return this.#leases.get(id)?.owner === owner;
  }

  /** Hands a delivery back: claimable again at once, in due order. */
  release(owner: string, id: string): void {
    const lease = this.#leases.get(id);
    if (lease?.owner !== owner) return;
    this.#leases.delete(id);
    const lane = this.#lanes.get(lease.entry.endpoint_id);
    if (lane?.leased.delete(lease.entry)) this.#return(lane, lease.entry);
  }

  /** Hands back every delivery `owner` holds (an owner that is gone). */
  releaseAll(owner: string): void {
    for (const [id, lease] of this.#leases) if (lease.owner === owner) this.release(owner, id);
  }

  /**
   * The lease of a delivery whose outcome is being recorded ends: the caller replaces the entry
   * (a retry, back in its lane) or deletes it in the same change.
   */
  settle(owner: string, id: string): void {
    if (this.holds(owner, id)) this.#leases.delete(id);
  }

  /** How many deliveries the endpoint has pending. */
  pendingOf(endpointId: number): number {
    const lane = this.#lanes.get(endpointId);
    return lane ? lane.retries.size + lane.returned.size + lane.fresh.size + lane.leased.size : 0;
  }

  nextDueAt(paused: (endpointId: number) => boolean = () => false): number | null {
    let next: number | null = null;
    for (const [endpointId, lane] of this.#lanes) {
      if (paused(endpointId)) continue;
      for (const map of [lane.retries, lane.returned, lane.fresh, lane.leased]) {
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
    if (!lane) return null;
    let next: number | null = null;
    for (const delivery of lane.retries) {
      next = delivery.next_attempt_at;
      break;
    }
    // Retries out of the walk (claimed, or back from a claim) count too.
    for (const set of [lane.leased, lane.returned]) {
      for (const delivery of set) if (delivery.attempts > 0 && (next === null || delivery.next_attempt_at < next)) next = delivery.next_attempt_at;
    }
    return next;
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
      if (lane.leasedUntil <= now) this.#expire(lane, now);
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

  /** Leases of the lane that ended: their deliveries go back into the walk. */
  #expire(lane: Lane, now: number): void {
    let until = Infinity;
    for (const delivery of lane.leased) {
      const lease = this.#leases.get(delivery.id);
      if (!lease || lease.until <= now) {
        lane.leased.delete(delivery);
        this.#return(lane, delivery);
      } else if (lease.until < until) until = lease.until;
    }
    lane.leasedUntil = until;
  }

  /** Puts a delivery back into its lane's walk, in due order. */
  #return(lane: Lane, delivery: Pending): void {
    let last: Pending | undefined;
    for (const entry of lane.returned) last = entry;
    lane.returned.add(delivery);
    if (last !== undefined && before(delivery, last)) lane.returned = new Set([...lane.returned].sort((a, b) => (before(a, b) ? -1 : 1)));
  }

  #add(delivery: Pending): void {
    let lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) {
      lane = { owner: delivery.owner_id, fresh: new Set(), retries: new Set(), retriesUpTo: 0, leased: new Set(), leasedUntil: Infinity, returned: new Set() };
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
    if (!lane.fresh.delete(delivery) && !lane.retries.delete(delivery) && !lane.leased.delete(delivery)) lane.returned.delete(delivery);
    if (lane.fresh.size === 0 && lane.retries.size === 0 && lane.leased.size === 0 && lane.returned.size === 0) this.#lanes.delete(delivery.endpoint_id);
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
