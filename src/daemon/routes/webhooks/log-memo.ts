// Serialized delivery-log answers per endpoint, reused until that endpoint's log changes. A
// watched log is polled far more often than it is appended to, and serialising 100 entries costs
// the request most of its time. Unlike ListMemo (which forgets every view on any change), an
// append forgets only its own endpoint's views: attempts to other endpoints go on all the time.
// Bounded by bytes, least recently used first. Used only with a synchronous change feed (the
// embedded store), where an append is announced before it resolves.
import type { FastifyReply } from 'fastify';
import type { ListAnswer } from '../list-memo.js';
import { sendLink } from '../pages.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** Bytes of answers kept, all endpoints together: a few dozen full logs' answers. */
export const LOG_MEMO_BYTES = 8 * 2 ** 20;

interface Memoised {
  body: Buffer;
  next: string | null;
}

export class LogMemo {
  /** Per endpoint: moves on every change, so an answer built across one is served but not kept. */
  readonly #generations = new Map<number, number>();
  /** Views by `endpoint:view`, least recently used first. */
  readonly #entries = new Map<string, Memoised & { endpointId: number }>();
  readonly #byEndpoint = new Map<number, Set<string>>();
  #bytes = 0;

  constructor(private readonly budget = LOG_MEMO_BYTES) {}

  /** The endpoint's log changed (or the endpoint is gone): forget its views. */
  invalidate(endpointId: number): void {
    this.#generations.set(endpointId, (this.#generations.get(endpointId) ?? 0) + 1);
    const keys = this.#byEndpoint.get(endpointId);
    if (!keys) return;
    for (const key of keys) this.#drop(key);
    this.#byEndpoint.delete(endpointId);
  }

  /** Sends the answer for `view` of the endpoint's log: memoised bytes, or `build()` serialised by the route's schema. */
  async send(reply: FastifyReply, endpointId: number, view: string, build: () => Promise<ListAnswer>): Promise<FastifyReply> {
    const key = `${endpointId}:${view}`;
    const hit = this.#entries.get(key);
    let entry: Memoised;
    if (hit !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      entry = hit;
    } else {
      const generation = this.#generations.get(endpointId) ?? 0;
      const answer = await build();
      entry = { body: Buffer.from(String(reply.serialize(answer.envelope))), next: answer.next };
      if (generation === (this.#generations.get(endpointId) ?? 0) && entry.body.length <= this.budget) this.#keep(key, endpointId, entry);
    }
    sendLink(reply, entry.next);
    return reply.type(JSON_TYPE).send(entry.body);
  }

  #keep(key: string, endpointId: number, entry: Memoised): void {
    this.#entries.set(key, { ...entry, endpointId });
    this.#bytes += entry.body.length;
    let keys = this.#byEndpoint.get(endpointId);
    if (!keys) this.#byEndpoint.set(endpointId, (keys = new Set()));
    keys.add(key);
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.budget) break;
      this.#drop(oldest);
    }
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.body.length;
    this.#byEndpoint.get(entry.endpointId)?.delete(key);
  }
}
