// Serialized list responses, reused while the collection they were built from is unchanged.
// Billing systems and scripts poll list endpoints far more often than the lists change; a
// repeated GET then costs a map lookup instead of querying and serialising again. Every change
// of the collections a view is built from (from the store's change feed) drops every entry, and
// an entry is served only once the feed is caught up (`changes.caughtUp()`: at once on the
// embedded store and on a shared database whose write fence holds; otherwise after asking the
// database what changed), so another daemon's change answered before the request came is not
// missed and nothing stale is served.
// Entries are kept flat (see keptBody): the serialiser's output is a string of many small pieces,
// which every answer would otherwise walk and encode again (for its length, then for the socket).
import type { FastifyReply } from 'fastify';
import type { Change, Store } from '../../store/store.js';
import { caughtUpFor } from '../caught-up.js';
import { sendLink } from './pages.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** What `build` makes: the answer's envelope and the next page's address (a `Link` header), if any. */
export interface ListAnswer {
  envelope: unknown;
  next: string | null;
}

/**
 * Answers up to this many bytes are kept as one flat string, larger ones as bytes. Node writes a
 * string body together with the response head as one piece; bytes beside the head go out as a
 * write of two parts, which TLS copies into one buffer again. Past a few kilobytes, encoding the
 * string on every answer costs more than that copy.
 */
export const STRING_BODY_MOST = 4096;

/** A serialised answer as it is kept and sent: its body (see STRING_BODY_MOST) and its size in bytes. */
export function keptBody(serialized: string): { body: string | Buffer; bytes: number } {
  const bytes = Buffer.from(serialized);
  // Decoding the bytes gives a flat string (the serialiser's is made of many pieces).
  return { body: bytes.length <= STRING_BODY_MOST ? bytes.toString() : bytes, bytes: bytes.length };
}

export class ListMemo {
  /** Moves on every invalidation, so an answer built across one is served but not kept. */
  #generation = 0;
  readonly #entries = new Map<string, { body: string | Buffer; next: string | null }>();
  readonly #unsubscribe: () => void;

  /**
   * Follows `feed`: a change for which `concerns` answers true forgets every view. At most
   * `capacity` views (one per subscription, say) are kept; past that, all are dropped.
   * @example
   * const lists = new ListMemo(app.store, (c) => c.kind === 'record' && c.collection === 'sites');
   * app.addHook('onClose', async () => lists.close());
   */
  constructor(
    private readonly store: Store,
    concerns: (change: Change) => boolean,
    private readonly capacity = 1024,
  ) {
    this.#unsubscribe = store.changes.subscribe((change) => {
      if (concerns(change)) this.invalidate();
    });
  }

  /** The collection changed: forget every view. */
  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /** Stops following the feed. */
  close(): void {
    this.#unsubscribe();
  }

  /**
   * Sends the 200 answer for `view` of the collection (a page of it): the memoised bytes, or
   * `build()`'s envelope serialised by the route's own response schema (then kept), with its
   * `Link` header. A memoised answer of a request whose feed question is answered is sent at
   * once (the reply, not a promise); else the answer once it is sent.
   */
  send(reply: FastifyReply, view: string, build: () => Promise<ListAnswer>): FastifyReply | Promise<FastifyReply> {
    // The request's question, shared with its caller's (see caught-up.ts).
    const caughtUp = caughtUpFor(this.store, reply.request);
    if (caughtUp === true) {
      const entry = this.#entries.get(view);
      return entry === undefined ? this.#build(reply, view, build, true) : this.#send(reply, entry);
    }
    // Not caught up (a shared database out of reach): built from the store, and not kept.
    return caughtUp.then((fresh) => {
      const entry = fresh ? this.#entries.get(view) : undefined;
      return entry === undefined ? this.#build(reply, view, build, fresh) : this.#send(reply, entry);
    });
  }

  async #build(reply: FastifyReply, view: string, build: () => Promise<ListAnswer>, fresh: boolean): Promise<FastifyReply> {
    // Read once caught up: a change the store's answer may miss moves it afterwards.
    const generation = this.#generation;
    const answer = await build();
    const entry = { body: keptBody(String(reply.serialize(answer.envelope))).body, next: answer.next };
    // The collection changed while build awaited the store: serve the answer, do not keep it.
    if (fresh && generation === this.#generation) {
      if (this.#entries.size >= this.capacity) this.#entries.clear();
      this.#entries.set(view, entry);
    }
    return this.#send(reply, entry);
  }

  #send(reply: FastifyReply, entry: { body: string | Buffer; next: string | null }): FastifyReply {
    sendLink(reply, entry.next);
    return reply.type(JSON_TYPE).send(entry.body);
  }
}
