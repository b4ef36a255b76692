// Pagination of every list (CONTRACT section 7): `limit` and `after` in the query, answers in id
// order, and the next page's address in a `Link: <…>; rel="next"` header, so the envelope keeps
// its three fields.
import { Type, type Static } from '@sinclair/typebox';
import { Id } from '../envelope.js';
import { PAGE_MAX } from '../page-limit.js';

export { PAGE_MAX };

/** The query fields of a paginated list, to spread into a route's querystring schema. */
export const PageFields = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_MAX, description: `At most this many items (1–${PAGE_MAX}, default ${PAGE_MAX})` })),
  after: Type.Optional(Id({ description: 'The page starts past this id (take it from the `Link` header of the previous page)' })),
};

export const PageQuery = Type.Object(PageFields, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;
