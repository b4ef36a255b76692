// Serialized list responses, reused while the collection they were built from is unchanged.
// Billing systems and scripts poll list endpoints far more often than the lists change; a
// repeated GET then costs a map lookup instead of filtering, sorting and serialising again.
// Any change to the collection (its revision) drops every entry, so nothing stale is served.
// Entries are kept as UTF-8 bytes: the serialiser's output is a string of many small pieces,
// which every answer would otherwise walk and encode again (for its length, then for the socket).
import type { FastifyReply } from 'fastify';

const JSON_TYPE = 'application/json; charset=utf-8';

export class ListMemo {
  #revision = -1;
  readonly #entries = new Map<string, Buffer>();

  /** At most `capacity` views (one per subscription, say) are kept; past that, all are dropped. */
  constructor(private readonly capacity = 1024) {}

  /**
   * Sends the 200 body for `view` of the collection (whose current revision `revisionOf` gives):
   * the memoised bytes, or `build()`'s envelope serialised by the route's own response schema
   * (then encoded and remembered).
   */
  async send(reply: FastifyReply, revisionOf: () => number, view: string, build: () => Promise<unknown>): Promise<FastifyReply> {
    const revision = revisionOf();
    if (revision !== this.#revision) {
      this.#entries.clear();
      this.#revision = revision;
    }
    let body = this.#entries.get(view);
    if (body === undefined) {
      body = Buffer.from(String(reply.serialize(await build())));
      // The collection changed while build awaited the store: serve the answer, do not keep it.
      if (revisionOf() === revision && this.#revision === revision) {
        if (this.#entries.size >= this.capacity) this.#entries.clear();
        this.#entries.set(view, body);
      }
    }
    return reply.type(JSON_TYPE).send(body);
  }
}
