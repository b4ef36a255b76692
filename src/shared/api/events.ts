// Schemas of the event catalogue listing and of admin-published events.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_ID } from '../envelope.js';

export const EventTypeSchema = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    fields: Type.Record(Type.String(), Type.Union([Type.Literal('integer'), Type.Literal('string')])),
  },
  { $id: 'EventType' },
);

export const PublishEventBody = Type.Object(
  {
    event: Type.String({ minLength: 1, maxLength: 100, description: 'A catalogue event name' }),
    data: Type.Object({}, { additionalProperties: true, description: 'Fields of the event (see GET /events/types)' }),
    // One schema with a type list rather than a union: a union's failure also reports the null
    // branch's `type` mismatch, which would make an out-of-range id a 400 instead of a 422.
    owner_id: Type.Optional(
      Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        minimum: 1,
        maximum: MAX_ID,
        description: 'The customer the event belongs to (null or absent: an event of no customer)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PublishEventBody = Static<typeof PublishEventBody>;

export const PublishEventResult = Type.Object({
  event_id: Type.String({ format: 'uuid' }),
  deliveries: Type.Integer({ description: 'Deliveries durably queued for this event' }),
});
