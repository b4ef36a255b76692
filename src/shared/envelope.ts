// The response envelope of every API answer (section 2.1) as TypeBox schemas,
// used for response serialisation and for the OpenAPI document.
import { Type, type TSchema, type Static } from '@sinclair/typebox';

export interface Envelope<T> {
  data: T;
  error: string | null;
  message: string;
}

/** A success envelope around `data`. */
export function ok<T>(data: T, message = ''): Envelope<T> {
  return { data, error: null, message };
}

/** Schema of a success envelope whose `data` has the given schema. */
export function EnvelopeOf<T extends TSchema>(data: T) {
  return Type.Object(
    {
      data,
      error: Type.Null(),
      message: Type.String(),
    },
    { additionalProperties: false },
  );
}

export const ErrorEnvelope = Type.Object(
  {
    data: Type.Union([Type.Null(), Type.Object({}, { additionalProperties: true })]),
    error: Type.String(),
    message: Type.String(),
  },
  { $id: 'ErrorEnvelope', additionalProperties: false, description: 'Error answer: `data` null (or details), `error` a fixed string, `message` for people' },
);
export type ErrorEnvelope = Static<typeof ErrorEnvelope>;

/** Response schemas for the given error statuses, for a route's `schema.response`. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out: Record<number, typeof ErrorEnvelope> = {};
  for (const status of statuses) out[status] = ErrorEnvelope;
  return out;
}

/** The largest id: 2^53 − 1, the largest integer a JSON number carries exactly. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * A record id in a request (path, query or body): an integer from 1 to 2^53 − 1. In the path and
 * the query it must also be written in plain decimal without leading zeros (see validation.ts).
 * @example
 * Type.Object({ subscription_id: Id({ description: 'The subscription' }) })
 */
export function Id(options: { description?: string } = {}) {
  return Type.Integer({ minimum: 1, maximum: MAX_ID, ...options });
}

export const IdParam = Type.Object({ id: Id({ description: 'Record id' }) });
export type IdParam = Static<typeof IdParam>;

export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });

/** OpenAPI security of authenticated routes: a Bearer token (JWT or API key) or X-API-Key. */
export const SECURITY: Array<Record<string, string[]>> = [{ bearer: [] }, { apiKey: [] }];
/** Routes that accept only a JWT from /auth/login. */
export const JWT_SECURITY: Array<Record<string, string[]>> = [{ bearer: [] }];
