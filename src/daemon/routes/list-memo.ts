// Serialized list responses, reused while the collection they were built from is unchanged.
// Billing systems and scripts poll list endpoints far more often than the lists change; a
// repeated GET then costs a map lookup instead of querying and serialising again. The owner
// calls invalidate() on every change of the collection (from the store's change feed), which
// drops every entry, so nothing stale is served.
// Entries are kept as UTF-8 bytes: the serialiser's output is a string of many small pieces,
// which every answer would otherwise walk and encode again (for its length, then for the socket).
import type { FastifyReply } from 'fastify';

const JSON_TYPE = 'application/json; charset=utf-8';

export class ListMemo {
  /** Moves on every invalidation, so an answer built across one is served but not kept. */
  #generation = 0;
  readonly #entries = new Map<string, Buffer>();

  /** At most `capacity` views (one per subscription, say) are kept; past that, all are dropped. */
  constructor(private readonly capacity = 1024) {}

  /** The collection changed: forget every view. */
  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /**
   * Sends the 200 body for `view` of the collection: the memoised bytes, or `build()`'s
   * envelope serialised by the route's own response schema (then encoded and remembered).
   */
  async send(reply: FastifyReply, view: string, build: () => Promise<unknown>): Promise<FastifyReply> {
    let body = this.#entries.get(view);
    if (body === undefined) {
      const generation = this.#generation;
      body = Buffer.from(String(reply.serialize(await build())));
      // The collection changed while build awaited the store: serve the answer, do not keep it.
      if (generation === this.#generation) {
        if (this.#entries.size >= this.capacity) this.#entries.clear();
        this.#entries.set(view, body);
      }
    }
    return reply.type(JSON_TYPE).send(body);
  }
}
