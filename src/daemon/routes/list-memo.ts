// Serialized list responses, reused while the collection they were built from is unchanged.
// Billing systems and scripts poll list endpoints far more often than the lists change; a
// repeated GET then costs a map lookup instead of querying and serialising again. The owner
// calls invalidate() on every change of the collection (from the store's change feed), which
// drops every entry, so nothing stale is served.
// Entries are kept as UTF-8 bytes: the serialiser's output is a string of many small pieces,
// which every answer would otherwise walk and encode again (for its length, then for the socket).
import type { FastifyReply } from 'fastify';
import { sendLink } from './pages.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** What `build` makes: the answer's envelope and the next page's address (a `Link` header), if any. */
export interface ListAnswer {
  envelope: unknown;
  next: string | null;
}

export class ListMemo {
  /** Moves on every invalidation, so an answer built across one is served but not kept. */
  #generation = 0;
  readonly #entries = new Map<string, { body: Buffer; next: string | null }>();

  /** At most `capacity` views (one per subscription, say) are kept; past that, all are dropped. */
  constructor(private readonly capacity = 1024) {}

  /** The collection changed: forget every view. */
  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /**
   * Sends the 200 answer for `view` of the collection (a page of it): the memoised bytes, or
   * `build()`'s envelope serialised by the route's own response schema (then encoded and
   * remembered), with its `Link` header.
   */
  async send(reply: FastifyReply, view: string, build: () => Promise<ListAnswer>): Promise<FastifyReply> {
    let entry = this.#entries.get(view);
    if (entry === undefined) {
      const generation = this.#generation;
      const answer = await build();
      entry = { body: Buffer.from(String(reply.serialize(answer.envelope))), next: answer.next };
      // The collection changed while build awaited the store: serve the answer, do not keep it.
      if (generation === this.#generation) {
        if (this.#entries.size >= this.capacity) this.#entries.clear();
        this.#entries.set(view, entry);
      }
    }
    sendLink(reply, entry.next);
    return reply.type(JSON_TYPE).send(entry.body);
  }
}
