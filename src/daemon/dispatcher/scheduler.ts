// Which claimed deliveries run next. The scheduler holds what this daemon has claimed (each
// delivery `ready` or `running`), decides what the next claim asks for, which ready delivery
// takes a free slot, and what is handed back to the outbox. It does no I/O: the dispatcher
// claims, runs and records; the scheduler only answers "what now".
//
// Limits, in the order they apply:
//   - at most `concurrency` attempts at once over all endpoints;
//   - an endpoint's own limits, read through `policyOf` (today `maxInFlight`, 8 by default):
//     the one place per-endpoint policies (caps, pause, rate) plug in;
//   - an owner's share: at most `ownerShare` attempts at once to one customer's endpoints, so a
//     customer whose endpoints hang cannot take every slot;
//   - an endpoint that got no answer at all is `probing`: one attempt at a time, none claimed
//     ahead, until one answers.
// Deliveries are claimed ahead of free slots (up to AHEAD times each limit), so a slot that
// comes free is filled at once instead of after a claim's round trip. Fairness is applied at
// claim time by skipping endpoints and owners without room, and at run time: what a claim
// brought beyond an owner's or endpoint's room is handed back at once.
import type { DeliveryRecord } from '../../store/types.js';
import { MAX_IN_FLIGHT_PER_ENDPOINT, RETRY_DELAY_MS } from '../../shared/webhook-protocol.js';

/**
 * An endpoint's delivery policy: the one place per-endpoint settings (caps, a retry schedule,
 * later a rate or a pause) reach the dispatcher. The scheduler reads `maxInFlight`; the attempt
 * runner reads the retry schedule.
 */
export interface EndpointPolicy {
  /** Attempts in flight at once to the endpoint. */
  maxInFlight: number;
  /** The delay before each retry (ms): `[2000]` is one retry 2 s after the first attempt; `[]` none. */
  retryDelaysMs: readonly number[];
}

export type PolicyOf = (endpointId: number) => EndpointPolicy;

/** The service description's policy, the same for every endpoint. */
export const DEFAULT_POLICY: EndpointPolicy = Object.freeze({ maxInFlight: MAX_IN_FLIGHT_PER_ENDPOINT, retryDelaysMs: Object.freeze([RETRY_DELAY_MS]) });

/** How the scheduler treats an endpoint it has seen attempts of. */
export type EndpointMode =
  /** Answering (or not yet tried): up to its `maxInFlight` at once. */
  | 'open'
  /** Its last attempt got no answer (time-out, refused or failed connection): one at a time, none claimed ahead. */
  | 'probing';

/** What an attempt told about its endpoint. */
export type Answer = 'success' | 'failure' | 'no answer' | 'not attempted';

/** A delivery this daemon holds the lease of. */
export interface Held<B> {
  delivery: DeliveryRecord;
  /** `ready`: claimed, waiting for a slot; `running`: its attempt is under way. */
  state: 'ready' | 'running';
  /** When it was claimed (the scheduler's clock). */
  claimedAt: number;
  /** What the dispatcher attached at claim (the read of the batch's endpoints). */
  batch: B;
}

/**
 * The next claim's options (without owner, clock and lease). `probe`: a claim of one delivery
 * per endpoint, so idle probing endpoints get their next attempt without being claimed ahead.
 */
export interface ClaimShape {
  kind: 'probe' | 'ahead';
  /** Announcements seen when it was planned: a claim that found nothing counts only if none came since. */
  announced: number;
  limit: number;
  perEndpoint: number;
  skipEndpoints: number[];
  skipOwners: number[];
}

export interface SchedulerOptions {
  /** Attempts at once over all endpoints. */
  concurrency: number;
  /** Attempts at once to one owner's endpoints. */
  ownerShare: number;
  /** A delivery ready this long without a slot is handed back (half a lease: it stays claimable elsewhere in time). */
  holdMs: number;
  policyOf?: PolicyOf;
}

/** Deliveries claimed ahead, per limit: in flight plus ready to start. */
export const AHEAD = 3;
/** The most a claim asks for. */
const CLAIM_MOST = 256;

/** Counts per key, dropping keys that reach zero. */
class Counts {
  readonly #map = new Map<number, number>();
  get(key: number): number {
    return this.#map.get(key) ?? 0;
  }
  add(key: number, delta: number): void {
    const next = this.get(key) + delta;
    if (next <= 0) this.#map.delete(key);
    else this.#map.set(key, next);
  }
  keys(): IterableIterator<number> {
    return this.#map.keys();
  }
}

export class Scheduler<B> {
  readonly #concurrency: number;
  readonly #ownerShare: number;
  readonly #holdMs: number;
  readonly #policyOf: PolicyOf;
  /** Held deliveries by id, in claim order (ready ones start oldest claimed first). */
  readonly #held = new Map<string, Held<B>>();
  #running = 0;
  /** Held (ready or running) and running, per endpoint and per owner. */
  readonly #heldByEndpoint = new Counts();
  readonly #runningByEndpoint = new Counts();
  readonly #heldByOwner = new Counts();
  readonly #runningByOwner = new Counts();
  /** Endpoints not `open` (see EndpointMode); absent means open. */
  readonly #probing = new Set<number>();
  /** Claims that found nothing, by their shape, until work is announced or falls due. */
  readonly #exhausted = new Set<string>();
  #announced = 0;

  constructor(options: SchedulerOptions) {
    this.#concurrency = options.concurrency;
    this.#ownerShare = options.ownerShare;
    this.#holdMs = options.holdMs;
    this.#policyOf = options.policyOf ?? (() => DEFAULT_POLICY);
  }

  get running(): number {
    return this.#running;
  }

  get readyCount(): number {
    return this.#held.size - this.#running;
  }

  modeOf(endpointId: number): EndpointMode {
    return this.#probing.has(endpointId) ? 'probing' : 'open';
  }

  has(id: string): boolean {
    return this.#held.has(id);
  }

  /** New work was announced or fell due: claims that found nothing may find something now. */
  announce(): void {
    this.#announced++;
    this.#exhausted.clear();
  }

  /**
   * The next claim to make, or null: none while less than half the window over all endpoints is
   * free, and none of a shape that found nothing since the last announcement.
   */
  nextClaim(): ClaimShape | null {
    const room = AHEAD * this.#concurrency - this.#held.size;
    if (room < this.#concurrency / 2) return null;
    const limit = Math.min(room, CLAIM_MOST);
    const skipOwners: number[] = [];
    for (const owner of this.#heldByOwner.keys()) if (this.#heldByOwner.get(owner) > (AHEAD - 1) * this.#ownerShare) skipOwners.push(owner);
    skipOwners.sort((a, b) => a - b);
    let idleProbes = false;
    for (const endpointId of this.#probing) if (this.#heldByEndpoint.get(endpointId) === 0) idleProbes = true;
    const candidates: ClaimShape[] = [];
    if (idleProbes) {
      // One each: endpoints that have anything held are skipped, so nothing comes back as excess.
      const skipEndpoints = [...this.#heldByEndpoint.keys()].sort((a, b) => a - b);
      candidates.push({ kind: 'probe', announced: this.#announced, limit, perEndpoint: 1, skipEndpoints, skipOwners });
    }
    const skipEndpoints = [...this.#probing];
    let perEndpoint = Infinity;
    for (const endpointId of this.#heldByEndpoint.keys()) {
      if (this.#probing.has(endpointId)) continue;
      const { maxInFlight } = this.#policyOf(endpointId);
      const left = AHEAD * maxInFlight - this.#heldByEndpoint.get(endpointId);
      // Claimed for again once a whole cap of its window is free.
      if (left < maxInFlight) skipEndpoints.push(endpointId);
      else perEndpoint = Math.min(perEndpoint, left);
    }
    skipEndpoints.sort((a, b) => a - b);
    if (perEndpoint === Infinity) perEndpoint = AHEAD * MAX_IN_FLIGHT_PER_ENDPOINT;
    candidates.push({ kind: 'ahead', announced: this.#announced, limit, perEndpoint, skipEndpoints, skipOwners });
    return candidates.find((shape) => !this.#exhausted.has(keyOf(shape))) ?? null;
  }

  /**
   * The claim found nothing: not made again with this shape until `announce`. Work announced
   * while it ran (a shared database's notice can overtake the claim's answer) keeps it open.
   */
  foundNothing(shape: ClaimShape): void {
    if (shape.announced === this.#announced) this.#exhausted.add(keyOf(shape));
  }

  /**
   * Holds claimed deliveries as ready. Answers those to hand back at once: beyond their owner's
   * or endpoint's window (fairness the claim could not apply), or of a probing endpoint that
   * already has one. A delivery held already (claimed again while its attempt runs) is ignored.
   */
  hold(deliveries: readonly DeliveryRecord[], batch: B, now: number): DeliveryRecord[] {
    const excess: DeliveryRecord[] = [];
    for (const delivery of deliveries) {
      if (this.#held.has(delivery.id)) continue;
      if (this.#heldByEndpoint.get(delivery.endpoint_id) >= this.#window(delivery.endpoint_id)) excess.push(delivery);
      else if (delivery.owner_id !== null && this.#heldByOwner.get(delivery.owner_id) >= AHEAD * this.#ownerShare) excess.push(delivery);
      else this.#add({ delivery, state: 'ready', claimedAt: now, batch });
    }
    return excess;
  }

  /**
   * Moves the ready deliveries that have room to `running`, oldest claimed first, and answers
   * them with those held ready too long (to hand back: any daemon may claim them afresh).
   */
  launchable(now: number): { start: Held<B>[]; stale: DeliveryRecord[] } {
    const start: Held<B>[] = [];
    const stale: DeliveryRecord[] = [];
    if (this.readyCount === 0) return { start, stale };
    for (const held of this.#held.values()) {
      if (held.state !== 'ready') continue;
      if (now - held.claimedAt >= this.#holdMs) {
        this.#remove(held);
        stale.push(held.delivery);
        continue;
      }
      if (this.#running >= this.#concurrency) break;
      if (this.#hasRoom(held.delivery)) {
        this.#run(held);
        start.push(held);
      }
    }
    return { start, stale };
  }

  /** A manual send: runs at once, whatever the limits (it still counts against them). */
  runNow(delivery: DeliveryRecord, batch: B, now: number): Held<B> | null {
    if (this.#held.has(delivery.id)) return null;
    const held: Held<B> = { delivery, state: 'ready', claimedAt: now, batch };
    this.#add(held);
    this.#run(held);
    return held;
  }

  /** The attempt of a running delivery has its answer: its slot is free, and its endpoint's mode follows the answer. */
  finished(id: string, answer: Answer): void {
    const held = this.#held.get(id);
    if (!held || held.state !== 'running') return;
    this.#remove(held);
    const endpointId = held.delivery.endpoint_id;
    if (answer === 'success') this.#probing.delete(endpointId);
    else if (answer === 'no answer') this.#probing.add(endpointId);
  }

  /** Takes every ready delivery out (a dispatcher that stops hands them back). */
  drainReady(): DeliveryRecord[] {
    const ready: DeliveryRecord[] = [];
    for (const held of [...this.#held.values()]) {
      if (held.state !== 'ready') continue;
      this.#remove(held);
      ready.push(held.delivery);
    }
    return ready;
  }

  /** How many of an endpoint's deliveries may be held: AHEAD times its cap, one while probing. */
  #window(endpointId: number): number {
    return this.#probing.has(endpointId) ? 1 : AHEAD * this.#policyOf(endpointId).maxInFlight;
  }

  #hasRoom(delivery: DeliveryRecord): boolean {
    const cap = this.#probing.has(delivery.endpoint_id) ? 1 : this.#policyOf(delivery.endpoint_id).maxInFlight;
    if (this.#runningByEndpoint.get(delivery.endpoint_id) >= cap) return false;
    return delivery.owner_id === null || this.#runningByOwner.get(delivery.owner_id) < this.#ownerShare;
  }

  #add(held: Held<B>): void {
    this.#held.set(held.delivery.id, held);
    this.#heldByEndpoint.add(held.delivery.endpoint_id, 1);
    if (held.delivery.owner_id !== null) this.#heldByOwner.add(held.delivery.owner_id, 1);
  }

  #run(held: Held<B>): void {
    held.state = 'running';
    this.#running++;
    this.#runningByEndpoint.add(held.delivery.endpoint_id, 1);
    if (held.delivery.owner_id !== null) this.#runningByOwner.add(held.delivery.owner_id, 1);
  }

  #remove(held: Held<B>): void {
    this.#held.delete(held.delivery.id);
    this.#heldByEndpoint.add(held.delivery.endpoint_id, -1);
    if (held.delivery.owner_id !== null) this.#heldByOwner.add(held.delivery.owner_id, -1);
    if (held.state === 'running') {
      this.#running--;
      this.#runningByEndpoint.add(held.delivery.endpoint_id, -1);
      if (held.delivery.owner_id !== null) this.#runningByOwner.add(held.delivery.owner_id, -1);
    }
  }
}

function keyOf(shape: ClaimShape): string {
  return `${shape.kind}|${shape.perEndpoint}|${shape.skipEndpoints.join(',')}|${shape.skipOwners.join(',')}`;
}
