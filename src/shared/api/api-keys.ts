// Schemas of API keys (section 2.3), shared by the daemon (validation, serialisation, docs) and the CLI (types).
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from '../envelope.js';

const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'A label, 1 to 100 characters' }),
    expires_at: Type.Optional(
      Type.String({ format: 'date-time', description: 'RFC 3339, in the future; the key stops working at that instant' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

/** A key as listed: never the key itself. */
export const ApiKey = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  key_prefix: Type.String({ description: 'The first 20 characters of the key (`ncp_` + 16 hex)' }),
  last_used_at: NullableTimestamp,
  expires_at: NullableTimestamp,
  created_at: Timestamp,
});
export type ApiKey = Static<typeof ApiKey>;

/** The create answer: the only time the full key is shown. */
export const CreatedApiKey = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  key: Type.String({ description: '`ncp_` + 64 hex characters; returned only here, store it now' }),
  key_prefix: Type.String(),
  expires_at: NullableTimestamp,
  created_at: Timestamp,
});
export type CreatedApiKey = Static<typeof CreatedApiKey>;
