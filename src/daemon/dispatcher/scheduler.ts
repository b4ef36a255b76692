// Which claimed deliveries run next. The scheduler holds what this daemon has claimed (each
// delivery `ready` or `running`), decides what the next claim asks for, which ready delivery
// takes a free slot, and what is handed back to the outbox. It does no I/O: the dispatcher
// claims, runs and records; the scheduler only answers "what now".
//
// Limits, in the order they apply:
//   - at most `concurrency` attempts at once over all endpoints;
//   - an endpoint's own limits, read through `policyOf` (`maxInFlight`, 8 by default, and
//     `ratePerSecond`): the one place per-endpoint policies plug in. A rate spaces the endpoint's
//     attempts 1000 / rate ms apart: by the turns the store gave its claimed deliveries
//     (`not_before`, when the store shares one schedule between daemons), else by this daemon's
//     own spacing;
//   - an owner's share: at most `ownerShare` attempts at once to one customer's endpoints, so a
//     customer whose endpoints hang cannot take every slot;
//   - an endpoint that got no answer at all is `probing`: one attempt at a time, none claimed
//     ahead, until one answers.
// Deliveries are claimed ahead of free slots (up to AHEAD times each limit, a rate-limited
// endpoint's RATE_AHEAD_MS of turns), so a slot that comes free is filled at once instead of
// after a claim's round trip. Ready deliveries wait in a queue per endpoint, so finding what may
// start costs the endpoints with ready work, not the deliveries held back by their endpoint's
// limits. Fairness is applied at claim time by skipping endpoints and owners without room, and
// at run time: what a claim brought beyond an owner's or endpoint's room is handed back at once,
// and endpoints that started attempts go behind those waiting for a slot.
import type { DeliveryRecord, WebhookRecord } from '../../store/types.js';
import { MAX_IN_FLIGHT_PER_ENDPOINT, RETRY_DELAY_MS } from '../../shared/webhook-protocol.js';

/**
 * An endpoint's delivery policy: the one place per-endpoint settings (caps, a rate, a retry
 * schedule) reach the dispatcher. The scheduler reads `maxInFlight` and `ratePerSecond`; the
 * attempt runner reads the retry schedule.
 */
export interface EndpointPolicy {
  /** Attempts in flight at once to the endpoint. */
  maxInFlight: number;
  /** Attempts started per second at most; null: no limit. */
  ratePerSecond: number | null;
  /** The delay before each retry (ms): `[2000]` is one retry 2 s after the first attempt; `[]` none. */
  retryDelaysMs: readonly number[];
}

export type PolicyOf = (endpointId: number) => EndpointPolicy;

/** The service description's policy, the same for every endpoint. */
export const DEFAULT_POLICY: EndpointPolicy = Object.freeze({
  maxInFlight: MAX_IN_FLIGHT_PER_ENDPOINT,
  ratePerSecond: null,
  retryDelaysMs: Object.freeze([RETRY_DELAY_MS]),
});

/** An endpoint's policy from its record: the fields it sets, the defaults for those it does not. */
export function policyOfRecord(record: Pick<WebhookRecord, 'retry_schedule' | 'max_in_flight' | 'rate_limit_per_second'>): EndpointPolicy {
  if (record.retry_schedule === undefined && record.max_in_flight === undefined && record.rate_limit_per_second == null) return DEFAULT_POLICY;
  return {
    maxInFlight: record.max_in_flight ?? DEFAULT_POLICY.maxInFlight,
    ratePerSecond: record.rate_limit_per_second ?? null,
    retryDelaysMs: record.retry_schedule?.map((seconds) => seconds * 1000) ?? DEFAULT_POLICY.retryDelaysMs,
  };
}

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
/** A rate-limited endpoint's deliveries claimed ahead: the turns of this long (and at most AHEAD times its cap). */
const RATE_AHEAD_MS = 2_000;
/**
 * How late (ms, at most one step) an attempt to a rate-limited endpoint this daemon spaces may
 * start and still keep the schedule: the next turn follows its turn, not its start.
 */
const RATE_SLACK_MS = 100;
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
  /** Held deliveries by id. */
  readonly #held = new Map<string, Held<B>>();
  /**
   * Ready deliveries per endpoint, each queue in claim order; endpoints in the order they are
   * served (one that started attempts goes to the back).
   */
  readonly #ready = new Map<number, Held<B>[]>();
  /** When this daemon next may start an attempt to a rate-limited endpoint it spaces itself. */
  readonly #nextSendAt = new Map<number, number>();
  /** The earliest time a ready delivery waiting only for its rate's turn may start (null: none waits so). */
  #nextLaunchAt: number | null = null;
  #running = 0;
  /** Held (ready or running) and running, per endpoint and per owner. */
  readonly #heldByEndpoint = new Counts();
  readonly #runningByEndpoint = new Counts();
  readonly #heldByOwner = new Counts();
  readonly #runningByOwner = new Counts();
  /** Endpoints not `open` (see EndpointMode); absent means open. */
  readonly #probing = new Set<number>();
  /** The owner of each endpoint with held deliveries (null: none recorded, no share applies). */
  readonly #ownerOf = new Map<number, number | null>();
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

  /**
   * When a ready delivery held back only by its endpoint's rate may start, as of the last
   * `launchable`: the dispatcher looks again then. Null: none is.
   */
  get nextLaunchAt(): number | null {
    return this.#nextLaunchAt;
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
   *
   * An owner without room is left out by its endpoints as well as by its id: the store drops
   * skipped endpoints before reading any delivery, while an owner's id is checked delivery by
   * delivery, so a claim made while the only busy owner is full would walk that owner's whole
   * backlog to find nothing. The claim asks for no more than the fullest owner still claimed
   * for has room for: a claim does not know whose deliveries it brings, and every one beyond
   * its owner's room is a lease written and handed back.
   */
  nextClaim(): ClaimShape | null {
    const room = AHEAD * this.#concurrency - this.#held.size;
    if (room < this.#concurrency / 2) return null;
    let limit = Math.min(room, CLAIM_MOST);
    const skipOwners: number[] = [];
    for (const owner of this.#heldByOwner.keys()) {
      const held = this.#heldByOwner.get(owner);
      if (held > (AHEAD - 1) * this.#ownerShare) skipOwners.push(owner);
      else limit = Math.min(limit, AHEAD * this.#ownerShare - held);
    }
    skipOwners.sort((a, b) => a - b);
    const fullOwners = new Set(skipOwners);
    const ownersSkipped = (endpointId: number) => fullOwners.size > 0 && fullOwners.has(this.#ownerOf.get(endpointId) ?? NaN);
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
      if (ownersSkipped(endpointId)) {
        skipEndpoints.push(endpointId);
        continue;
      }
      const { maxInFlight, ratePerSecond } = this.#policyOf(endpointId);
      const window = this.#window(endpointId);
      const left = window - this.#heldByEndpoint.get(endpointId);
      // Claimed for again once a whole cap of its window is free (half of a rate's).
      if (left < Math.min(maxInFlight, Math.ceil(window / 2))) skipEndpoints.push(endpointId);
      // A rate's window is small: what a claim brings beyond it is handed back, rather than
      // every other endpoint claimed for in steps that small.
      else if (ratePerSecond === null) perEndpoint = Math.min(perEndpoint, left);
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
   * Moves the ready deliveries that have room (and whose rate's turn has come) to `running`,
   * each endpoint's oldest claimed first, endpoints in turn; answers them with those held ready
   * too long (to hand back: any daemon may claim them afresh).
   */
  launchable(now: number): { start: Held<B>[]; stale: DeliveryRecord[] } {
    const start: Held<B>[] = [];
    const stale: DeliveryRecord[] = [];
    this.#nextLaunchAt = null;
    if (this.readyCount === 0) return { start, stale };
    const served: number[] = [];
    for (const [endpointId, queue] of this.#ready) {
      // Each queue is in claim order: the head is its oldest.
      while (queue.length > 0 && now - queue[0].claimedAt >= this.#holdMs) {
        const held = queue[0];
        this.#remove(held);
        stale.push(held.delivery);
      }
      let started = false;
      const policy = this.#policyOf(endpointId);
      while (queue.length > 0 && this.#running < this.#concurrency && this.#hasRoom(queue[0].delivery, policy)) {
        const held = queue[0];
        if (policy.ratePerSecond !== null) {
          const turn = this.#turnOf(held.delivery, now);
          if (turn > now) {
            this.#nextLaunchAt = this.#nextLaunchAt === null ? turn : Math.min(this.#nextLaunchAt, turn);
            break;
          }
          this.#tookTurn(held.delivery, policy.ratePerSecond, now);
        }
        this.#run(held);
        start.push(held);
        started = true;
      }
      if (started && queue.length > 0) served.push(endpointId);
      if (this.#running >= this.#concurrency) break;
    }
    // Served endpoints go to the back: a busy endpoint does not keep the first free slots.
    for (const endpointId of served) {
      const queue = this.#ready.get(endpointId);
      if (!queue) continue;
      this.#ready.delete(endpointId);
      this.#ready.set(endpointId, queue);
    }
    return { start, stale };
  }

  /** A manual send: runs at once, whatever the limits (it still counts against them, a rate's turn included). */
  runNow(delivery: DeliveryRecord, batch: B, now: number): Held<B> | null {
    if (this.#held.has(delivery.id)) return null;
    const held: Held<B> = { delivery, state: 'ready', claimedAt: now, batch };
    this.#add(held);
    const { ratePerSecond } = this.#policyOf(delivery.endpoint_id);
    if (ratePerSecond !== null) this.#tookTurn(delivery, ratePerSecond, now);
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
    for (const queue of [...this.#ready.values()]) {
      for (const held of [...queue]) {
        this.#remove(held);
        ready.push(held.delivery);
      }
    }
    return ready;
  }

  /**
   * How many of an endpoint's deliveries may be held: AHEAD times its cap (with a rate, no more
   * than its turns of RATE_AHEAD_MS), one while probing.
   */
  #window(endpointId: number): number {
    if (this.#probing.has(endpointId)) return 1;
    const { maxInFlight, ratePerSecond } = this.#policyOf(endpointId);
    const window = AHEAD * maxInFlight;
    return ratePerSecond === null ? window : Math.min(window, Math.max(1, Math.ceil((ratePerSecond * RATE_AHEAD_MS) / 1000)));
  }

  /**
   * When a ready delivery to a rate-limited endpoint may start: the turn the store gave it, else
   * this daemon's next turn for the endpoint.
   */
  #turnOf(delivery: DeliveryRecord, now: number): number {
    return delivery.not_before ?? this.#nextSendAt.get(delivery.endpoint_id) ?? now;
  }

  /**
   * A rate-limited endpoint's attempt starts now. Turns given by the store are the store's
   * schedule; otherwise this daemon's own turn moves on by one step: from its turn when it
   * starts on time or a little late (so wake-up delays do not lower the rate), from now when it
   * is later than that (after an idle spell: no burst).
   */
  #tookTurn(delivery: DeliveryRecord, ratePerSecond: number, now: number): void {
    if (delivery.not_before !== undefined) return;
    const step = 1000 / ratePerSecond;
    const turn = this.#nextSendAt.get(delivery.endpoint_id);
    const from = turn !== undefined && now - turn <= Math.min(RATE_SLACK_MS, step) ? turn : now;
    this.#nextSendAt.set(delivery.endpoint_id, from + step);
  }

  #hasRoom(delivery: DeliveryRecord, policy: EndpointPolicy): boolean {
    const cap = this.#probing.has(delivery.endpoint_id) ? 1 : policy.maxInFlight;
    if (this.#runningByEndpoint.get(delivery.endpoint_id) >= cap) return false;
    return delivery.owner_id === null || this.#runningByOwner.get(delivery.owner_id) < this.#ownerShare;
  }

  #add(held: Held<B>): void {
    this.#held.set(held.delivery.id, held);
    const endpointId = held.delivery.endpoint_id;
    const queue = this.#ready.get(endpointId);
    if (queue) queue.push(held);
    else this.#ready.set(endpointId, [held]);
    this.#heldByEndpoint.add(held.delivery.endpoint_id, 1);
    this.#ownerOf.set(endpointId, held.delivery.owner_id);
    if (held.delivery.owner_id !== null) this.#heldByOwner.add(held.delivery.owner_id, 1);
  }

  #run(held: Held<B>): void {
    this.#unready(held);
    held.state = 'running';
    this.#running++;
    this.#runningByEndpoint.add(held.delivery.endpoint_id, 1);
    if (held.delivery.owner_id !== null) this.#runningByOwner.add(held.delivery.owner_id, 1);
  }

  /** Takes a ready delivery out of its endpoint's queue (in claim order: almost always its head). */
  #unready(held: Held<B>): void {
    if (held.state !== 'ready') return;
    const endpointId = held.delivery.endpoint_id;
    const queue = this.#ready.get(endpointId);
    if (!queue) return;
    const at = queue[0] === held ? 0 : queue.indexOf(held);
    if (at !== -1) queue.splice(at, 1);
    if (queue.length === 0) this.#ready.delete(endpointId);
  }

  #remove(held: Held<B>): void {
    this.#unready(held);
    this.#held.delete(held.delivery.id);
    this.#heldByEndpoint.add(held.delivery.endpoint_id, -1);
    if (this.#heldByEndpoint.get(held.delivery.endpoint_id) === 0) this.#ownerOf.delete(held.delivery.endpoint_id);
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
