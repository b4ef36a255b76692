// The claim loop: asks the store for due deliveries when the scheduler has room and something
// may be due, holds what comes back in the scheduler, and sleeps until the next delivery falls
// due, the store announces outbox work, a slot comes free, or the safety poll (another
// daemon's leases end without a word). Manual sends (test, redeliver) are claimed by id at
// once, outside the limits. Starting attempts is the dispatcher's: the claimer tells it when
// held deliveries may start.
import { performance } from 'node:perf_hooks';
import type { Store } from '../../store/store.js';
import type { DeliveryRecord } from '../../store/types.js';
import type { Clock } from '../services.js';
import type { Held, Scheduler } from './scheduler.js';

/** Claims made in one turn of the loop at most, before it looks at manual sends and stopping again. */
const CLAIMS_PER_TURN = 16;

/** The loop's life: `idle` before start, `running`, `stopping` once stop was called. */
export type ClaimerState = 'idle' | 'running' | 'stopping';

/** What a claimed batch carries into the scheduler: the read of its endpoints, under way. */
export interface BatchRead {
  endpoints: Promise<unknown>;
}

export interface ClaimerOptions<B extends BatchRead> {
  store: Store;
  clock: Clock;
  scheduler: Scheduler<B>;
  /** The lease owner claims are made for. */
  owner: string;
  leaseMs: number;
  /** The safety poll (ms). */
  pollMs: number;
  /** Reads a claimed batch's endpoints (in the background). */
  read: (deliveries: DeliveryRecord[]) => B;
  /** Whether an endpoint's policy was read before (its first batch waits for the read). */
  knows: (endpointId: number) => boolean;
  /** Work done at the start of every turn, before claiming (the dispatcher's sweep of expired secrets). */
  beforeTurn: () => void;
  /** Starts the held deliveries that have room. */
  launchReady: () => void;
  /** Starts one held delivery (a manual send, outside the limits). */
  launch: (held: Held<B>) => void;
  /** Gives claimed deliveries back to the outbox. */
  handBack: (deliveries: DeliveryRecord[]) => Promise<void>;
  /**
   * Hand-backs still out (those `launchReady` or a finished attempt gave back as held too long),
   * or null: a claim waits for them, or it would step over their still-leased deliveries and take
   * newer ones of the same endpoints first.
   */
  handingBack: () => Promise<void> | null;
  failed: (error: unknown, message: string) => void;
}

export class Claimer<B extends BatchRead> {
  readonly #o: ClaimerOptions<B>;
  /** Manual deliveries to claim at once. */
  readonly #manual = new Set<string>();
  #state: ClaimerState = 'idle';
  #loop: Promise<void> = Promise.resolve();
  /** When the loop last began a turn (performance.now()), for readiness; null before the first. */
  #turnedAt: number | null = null;
  /** Woken since the turn began: the loop turns again before sleeping. */
  #woken = false;
  #wakeSleeper: (() => void) | null = null;

  constructor(options: ClaimerOptions<B>) {
    this.#o = options;
  }

  get state(): ClaimerState {
    return this.#state;
  }

  get running(): boolean {
    return this.#state === 'running';
  }

  /** How long ago the loop last turned (ms), null before its first turn. */
  get sinceTurnMs(): number | null {
    return this.#turnedAt === null ? null : performance.now() - this.#turnedAt;
  }

  start(): void {
    if (this.#state !== 'idle') return;
    this.#state = 'running';
    this.#loop = this.#run().catch((error) => this.#o.failed(error, 'the webhook dispatcher stopped'));
  }

  /** Stops claiming; resolves once the loop's turn is over (what it claimed meanwhile is handed back). */
  stop(): Promise<void> {
    this.#state = 'stopping';
    this.wake();
    return this.#loop;
  }

  /** Work may be claimable (announced, a slot came free, an outcome was recorded): turn again. */
  wake(): void {
    this.#woken = true;
    const wake = this.#wakeSleeper;
    this.#wakeSleeper = null;
    wake?.();
  }

  /** Work was announced by the store: claims that found nothing may find something now. */
  announced(): void {
    this.#o.scheduler.announce();
    this.wake();
  }

  /** Claims a queued manual delivery at once, whatever the slots in use. */
  claimNow(deliveryId: string): void {
    if (this.#state !== 'running') return;
    this.#manual.add(deliveryId);
    this.wake();
  }

  async #run(): Promise<void> {
    while (this.#state === 'running') {
      this.#turnedAt = performance.now();
      this.#woken = false;
      let wait = this.#o.pollMs;
      try {
        this.#o.beforeTurn();
        await this.#claimManual();
        await this.#claimDue();
        // Woken meanwhile (a slot came free, work was queued): claim again first.
        if (this.#woken || this.#state !== 'running') continue;
        const due = this.#holding() ? null : await this.#o.store.outbox.nextDueAt();
        const now = this.#o.clock();
        // Due now but not claimable (leased, or its endpoint or owner without room): a slot
        // coming free or the safety poll brings the loop back.
        if (due !== null && due > now) wait = Math.min(due - now, this.#o.pollMs);
        // A ready delivery waiting for its endpoint's rate starts on time, not at the next poll.
        const turn = this.#o.scheduler.nextLaunchAt;
        if (turn !== null) wait = Math.min(wait, Math.max(1, turn - now));
      } catch (error) {
        this.#o.failed(error, 'could not take webhook deliveries from the outbox');
      }
      if (this.#woken || this.#state !== 'running') continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#wakeSleeper = null;
          // Deliveries fall due (and other daemons' leases end) without a word: claim afresh.
          this.#o.scheduler.announce();
          resolve();
        }, wait);
        this.#wakeSleeper = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /**
   * Whether the scheduler holds a claimed delivery (ready or in flight). Such a delivery is
   * pending in the store until its outcome is recorded, and fell due before it was claimed, so
   * the earliest due time the store would answer is not in the future and could not shorten the
   * sleep: it is not asked for (a statement per turn under load). Once nothing is held, the
   * turn that follows the last recorded outcome (the recorder wakes the loop) asks again. Only
   * an endpoint paused or deleted while its delivery is held hides that delivery from the
   * store's answer; another delivery falling due within the sleep then waits for the safety poll.
   */
  #holding(): boolean {
    const { scheduler } = this.#o;
    return scheduler.running > 0 || scheduler.readyCount > 0;
  }

  #claimOptions(limit: number, perEndpoint: number) {
    return { owner: this.#o.owner, now: this.#o.clock(), leaseMs: this.#o.leaseMs, limit, perEndpoint };
  }

  async #claimManual(): Promise<void> {
    if (this.#manual.size === 0) return;
    const ids = [...this.#manual];
    this.#manual.clear();
    const claimed = await this.#o.store.outbox.claim({ ...this.#claimOptions(ids.length, ids.length), ids });
    // Claimed by another daemon (or already attempted): its log entry reaches the waiter through the change feed.
    if (this.#state !== 'running') return this.#o.handBack(claimed);
    const read = this.#o.read(claimed);
    for (const delivery of claimed) {
      const held = this.#o.scheduler.runNow(delivery, read, this.#o.clock());
      if (held) this.#o.launch(held);
    }
  }

  /** Claims what the scheduler asks for until it asks for nothing more, starting what has room. */
  async #claimDue(): Promise<void> {
    const { scheduler, store } = this.#o;
    for (let round = 0; round < CLAIMS_PER_TURN && this.#state === 'running'; round++) {
      this.#o.launchReady();
      const shape = scheduler.nextClaim();
      if (!shape) return;
      const handingBack = this.#o.handingBack();
      if (handingBack) await handingBack;
      if (this.#state !== 'running') return;
      const options = this.#claimOptions(shape.limit, shape.perEndpoint);
      const claimed = await store.outbox.claim({ ...options, skipEndpoints: shape.skipEndpoints, skipOwners: shape.skipOwners });
      if (this.#state !== 'running') return this.#o.handBack(claimed);
      if (claimed.length === 0) {
        scheduler.foundNothing(shape);
        continue;
      }
      // An endpoint's policy (its cap) is known before its first deliveries are held: a batch
      // with an endpoint not read before waits for the read (its attempts awaited it anyway; a
      // failed one fails them). Known endpoints go on with the policy last read, which this
      // read refreshes.
      const read = this.#o.read(claimed);
      if (claimed.some((d) => !this.#o.knows(d.endpoint_id))) {
        await read.endpoints.catch(() => undefined);
        if (this.#state !== 'running') return this.#o.handBack(claimed);
      }
      // Held since the claim's `now`, where their leases began, not since its answer came: a
      // claim answered late (a slow statement, a moved clock) may hold leases half gone or ended,
      // which launchReady hands back instead of starting while another claim may take them.
      const excess = scheduler.hold(claimed, read, options.now);
      if (excess.length > 0) {
        // Given back before the next claim: still leased then, the excess would be stepped over
        // and a newer delivery of its endpoint claimed and sent before it.
        this.#o.launchReady();
        await this.#o.handBack(excess);
      }
    }
    this.#o.launchReady();
  }
}
