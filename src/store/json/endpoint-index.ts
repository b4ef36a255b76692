// Active endpoints by owner and event name (`*` as a name of its own), so matching an event
// costs a few map lookups however many endpoints the store holds. Kept in step by the webhooks
// table's own puts and deletes (see Table.onChange): inserts, updates, removals, cascades,
// rollbacks and journal replay all pass through them, so the index cannot drift from the table.
import type { WebhookRecord } from '../types.js';

/** The names an endpoint listens to: `*` alone, or its catalogue names (spaces around commas ignored). */
function namesOf(events: string): string[] {
  const names = new Set<string>();
  for (const raw of events.split(',')) {
    const name = raw.trim();
    if (name !== '') names.add(name);
  }
  return [...names];
}

export class EndpointIndex {
  /** user id → event name or `*` → endpoint id → record. Only active endpoints are held. */
  readonly #byUser = new Map<number, Map<string, Map<number, WebhookRecord>>>();

  /** Wired to the webhooks table: told of every record that replaces or removes another. */
  onChange = (previous: WebhookRecord | undefined, next: WebhookRecord | undefined): void => {
    if (previous) this.#remove(previous);
    if (next?.active) this.#add(next);
  };

  /**
   * The active endpoints of the given users that listen to `event` by name or by `*`, by id.
   * Users are the event's owner and the admins; a user named twice counts once. Without
   * `wildcard`, only endpoints naming the event (an operational event: `*` does not take it).
   */
  match(event: string, userIds: Iterable<number>, wildcard = true): WebhookRecord[] {
    const found: WebhookRecord[] = [];
    const seen = new Set<number>();
    for (const userId of userIds) {
      if (seen.has(userId)) continue;
      seen.add(userId);
      const names = this.#byUser.get(userId);
      if (!names) continue;
      for (const name of wildcard ? [event, '*'] : [event]) {
        const endpoints = names.get(name);
        if (endpoints) for (const endpoint of endpoints.values()) found.push(endpoint);
      }
    }
    return found.sort((a, b) => a.id - b.id);
  }

  #add(endpoint: WebhookRecord): void {
    let names = this.#byUser.get(endpoint.user_id);
    if (!names) this.#byUser.set(endpoint.user_id, (names = new Map()));
    for (const name of namesOf(endpoint.events)) {
      let endpoints = names.get(name);
      if (!endpoints) names.set(name, (endpoints = new Map()));
      endpoints.set(endpoint.id, endpoint);
    }
  }

  #remove(endpoint: WebhookRecord): void {
    const names = this.#byUser.get(endpoint.user_id);
    if (!names) return;
    for (const name of namesOf(endpoint.events)) {
      const endpoints = names.get(name);
      if (!endpoints) continue;
      endpoints.delete(endpoint.id);
      if (endpoints.size === 0) names.delete(name);
    }
    if (names.size === 0) this.#byUser.delete(endpoint.user_id);
  }
}
