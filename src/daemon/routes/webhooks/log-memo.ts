// Serialized delivery-log answers per endpoint, reused while the store's revision of that log is
// unchanged. A watched log is polled far more often than it is appended to, and building and
// serialising 100 entries costs the request most of its time, while the revision is a counter
// in memory (JSON store) or one cheap indexed statement (PostgreSQL, exact across daemons).
// Unlike ListMemo (which forgets every view on any change), nothing is forgotten on a change:
// an answer whose revision is not the current one is rebuilt. Bounded by bytes, least recently
// used first.
import type { FastifyReply } from 'fastify';
import { keptBody, type ListAnswer } from '../list-memo.js';
import { sendLink } from '../pages.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** Bytes of answers kept, all endpoints together: a few dozen full logs' answers. */
export const LOG_MEMO_BYTES = 8 * 2 ** 20;

interface Memoised {
  revision: string;
  body: string | Buffer;
  bytes: number;
  next: string | null;
}

export class LogMemo {
  /** Answers by `endpoint:view`, least recently used first. */
  readonly #entries = new Map<string, Memoised>();
  #bytes = 0;

  constructor(private readonly budget = LOG_MEMO_BYTES) {}

  /**
   * Sends the answer for `view` of the endpoint's log: the memoised bytes when they were built at
   * `revision` (read before `build` would run, so an answer is never kept under a revision older
   * than what it shows), else `build()`'s envelope serialised by the route's schema.
   */
  async send(reply: FastifyReply, endpointId: number, view: string, revision: string, build: () => Promise<ListAnswer>): Promise<FastifyReply> {
    const key = `${endpointId}:${view}`;
    let entry = this.#entries.get(key);
    if (entry !== undefined && entry.revision === revision) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    } else {
      if (entry !== undefined) this.#drop(key);
      const answer = await build();
      entry = { revision, ...keptBody(String(reply.serialize(answer.envelope))), next: answer.next };
      if (entry.bytes <= this.budget) this.#keep(key, entry);
    }
    sendLink(reply, entry.next);
    return reply.type(JSON_TYPE).send(entry.body);
  }

  #keep(key: string, entry: Memoised): void {
    this.#drop(key);
    this.#entries.set(key, entry);
    this.#bytes += entry.bytes;
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.budget) break;
      this.#drop(oldest);
    }
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}
