// Claims of the JSON store's outbox: pending deliveries indexed per endpoint (new ones and
// retries, each in due order), with leases held in memory. One process owns a JSON store, so a
// lease never has to outlive it: after a crash every pending delivery is offered again, which
// is what an expired lease means. Claiming serves endpoints in turn, so one endpoint's backlog
// does not hold back the others.
import type { ClaimOptions } from '../store.js';
import type { Pending } from './outbox-table.js';

/** Sets of entries, not maps by id: an entry is replaced on every change, so its identity is its key. */
interface Lane {
  owner: number | null;
  fresh: Set<Pending>;
  retries: Set<Pending>;
}

interface Lease {
  owner: string;
  until: number;
}

export class OutboxLanes {
  /** Endpoints with pending deliveries; an endpoint served by a claim moves to the end (turns). */
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

  claim(options: ClaimOptions, lookup: (id: string) => Pending | undefined): Pending[] {
    const { now, limit } = options;
    const taken: Pending[] = [];
    if (limit <= 0) return taken;
    if (options.ids) {
      for (const id of options.ids) {
        const delivery = lookup(id);
        if (delivery && delivery.next_attempt_at <= now && this.#free(id, now)) taken.push(delivery);
        if (taken.length >= limit) break;
      }
    } else {
      const skipEndpoints = new Set(options.skipEndpoints ?? []);
      const skipOwners = new Set(options.skipOwners ?? []);
      // What each owner may still take in this claim.
      const ownerRoom = new Map(options.ownerRoom ?? []);
      const roomOf = (owner: number | null) => (owner === null ? Infinity : (ownerRoom.get(owner) ?? options.perOwner ?? Infinity));
      const served: number[] = [];
      for (const [endpointId, lane] of this.#lanes) {
        if (taken.length >= limit) break;
        if (skipEndpoints.has(endpointId) || (lane.owner !== null && skipOwners.has(lane.owner))) continue;
        const room = roomOf(lane.owner);
        if (room <= 0) continue;
        const before = taken.length;
        this.#takeDue(lane, now, Math.min(options.perEndpoint, limit - taken.length, room), taken);
        if (taken.length > before) served.push(endpointId);
        if (lane.owner !== null) ownerRoom.set(lane.owner, room - (taken.length - before));
      }
      for (const endpointId of served) {
        const lane = this.#lanes.get(endpointId)!;
        this.#lanes.delete(endpointId);
        this.#lanes.set(endpointId, lane);
      }
      taken.sort((a, b) => a.next_attempt_at - b.next_attempt_at);
    }
    for (const delivery of taken) this.#leases.set(delivery.id, { owner: options.owner, until: now + options.leaseMs });
    return taken;
  }

  /**
   * Leases the new deliveries `ids` (just queued, in order) within a claim's room, as a claim
   * would, but only of endpoints with no other claimable delivery: those go first, to the next claim.
   */
  leaseNew(options: ClaimOptions, ids: readonly string[], lookup: (id: string) => Pending | undefined): Pending[] {
    const { now } = options;
    const skipEndpoints = new Set(options.skipEndpoints ?? []);
    const skipOwners = new Set(options.skipOwners ?? []);
    const ownerRoom = new Map(options.ownerRoom ?? []);
    const roomOf = (owner: number | null) => (owner === null ? Infinity : (ownerRoom.get(owner) ?? options.perOwner ?? Infinity));
    const fresh = new Set(ids);
    const perEndpoint = new Map<number, number>();
    const waiting = new Map<number, boolean>();
    const taken: Pending[] = [];
    for (const id of ids) {
      if (taken.length >= options.limit) break;
      const delivery = lookup(id);
      if (!delivery || delivery.next_attempt_at > now || !this.#free(id, now)) continue;
      const endpointId = delivery.endpoint_id;
      if (skipEndpoints.has(endpointId) || (delivery.owner_id !== null && skipOwners.has(delivery.owner_id))) continue;
      let blocked = waiting.get(endpointId);
      if (blocked === undefined) {
        blocked = this.#claimableBesides(endpointId, now, fresh);
        waiting.set(endpointId, blocked);
      }
      const count = perEndpoint.get(endpointId) ?? 0;
      if (blocked || count >= options.perEndpoint || roomOf(delivery.owner_id) <= 0) continue;
      perEndpoint.set(endpointId, count + 1);
      if (delivery.owner_id !== null) ownerRoom.set(delivery.owner_id, roomOf(delivery.owner_id) - 1);
      taken.push(delivery);
    }
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

  nextDueAt(): number | null {
    let next: number | null = null;
    for (const lane of this.#lanes.values()) {
      for (const map of [lane.retries, lane.fresh]) {
        for (const delivery of map) {
          if (next === null || delivery.next_attempt_at < next) next = delivery.next_attempt_at;
          break;
        }
      }
    }
    return next;
  }

  clear(): void {
    this.#lanes.clear();
    this.#leases.clear();
    this.#uncommitted.clear();
  }

  /**
   * Whether an endpoint has a claimable delivery other than `except`. Retries are in due order,
   * so the look stops at the first not yet due; new deliveries are in queue order, the leased
   * ones (a claimer's few) first.
   */
  #claimableBesides(endpointId: number, now: number, except: Set<string>): boolean {
    const lane = this.#lanes.get(endpointId);
    if (!lane) return false;
    for (const delivery of lane.retries) {
      if (delivery.next_attempt_at > now) break;
      if (this.#free(delivery.id, now)) return true;
    }
    for (const delivery of lane.fresh) {
      if (!except.has(delivery.id) && delivery.next_attempt_at <= now && this.#free(delivery.id, now)) return true;
    }
    return false;
  }

  #free(id: string, now: number): boolean {
    if (this.#uncommitted.size > 0 && this.#uncommitted.has(id)) return false;
    const lease = this.#leases.get(id);
    return !lease || lease.until <= now;
  }

  /**
   * Up to `count` due, unleased deliveries of one lane in due order. Each map is in insertion
   * order, which is due order for deliveries queued "now" and for retries (2 s after their
   * attempt); one queued for later is passed over, not waited for.
   */
  #takeDue(lane: Lane, now: number, count: number, into: Pending[]): void {
    const due: Pending[] = [];
    for (const map of [lane.retries, lane.fresh]) {
      let found = 0;
      for (const delivery of map) {
        if (found >= count) break;
        if (delivery.next_attempt_at > now || !this.#free(delivery.id, now)) continue;
        due.push(delivery);
        found++;
      }
    }
    due.sort((a, b) => a.next_attempt_at - b.next_attempt_at);
    into.push(...due.slice(0, count));
  }

  #add(delivery: Pending): void {
    let lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) {
      lane = { owner: delivery.owner_id, fresh: new Set(), retries: new Set() };
      this.#lanes.set(delivery.endpoint_id, lane);
    }
    (delivery.attempts > 0 ? lane.retries : lane.fresh).add(delivery);
  }

  #remove(delivery: Pending): void {
    const lane = this.#lanes.get(delivery.endpoint_id);
    if (!lane) return;
    lane.fresh.delete(delivery);
    lane.retries.delete(delivery);
    if (lane.fresh.size === 0 && lane.retries.size === 0) this.#lanes.delete(delivery.endpoint_id);
  }
}
