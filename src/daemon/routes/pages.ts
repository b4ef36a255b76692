// One page of a list: the items past `after` in the list's order, at most `limit` of them, and
// the relative address of the next page when one exists (RFC 8288: a relative reference resolves
// against the request's own URL, so it holds behind a proxy that rewrites the host).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PAGE_MAX, type PageQuery } from '../../shared/api/pages.js';

/** `asc`: oldest id first, `after` means larger ids; `desc` (delivery logs): newest first, `after` means older. */
export type PageOrder = 'asc' | 'desc';

export interface Page<T> {
  items: T[];
  /** The relative URL of the next page, or null on the last one. */
  next: string | null;
}

/**
 * Cuts the page `query` asks for out of `items` (any order: they are sorted by id here).
 * @example
 * const { items, next } = pageOf(request, sites, request.query);
 */
export function pageOf<T extends { id: number }>(request: FastifyRequest, items: readonly T[], query: PageQuery, order: PageOrder = 'asc'): Page<T> {
  const limit = query.limit ?? PAGE_MAX;
  const after = query.after;
  const sorted = [...items].sort(order === 'asc' ? (a, b) => a.id - b.id : (a, b) => b.id - a.id);
  const past = after === undefined ? sorted : sorted.filter((item) => (order === 'asc' ? item.id > after : item.id < after));
  const page = past.slice(0, limit);
  const next = past.length > limit ? nextUrl(request, page[page.length - 1].id) : null;
  return { items: page, next };
}

/** Sets the `Link` header of a page that has a next one. */
export function sendLink(reply: FastifyReply, next: string | null): void {
  if (next) reply.header('link', `<${next}>; rel="next"`);
}

function nextUrl(request: FastifyRequest, lastId: number): string {
  const url = new URL(request.url, 'http://localhost');
  url.searchParams.set('after', String(lastId));
  return `${url.pathname}?${url.searchParams}`;
}
