// Schemas of the event catalogue listing and of admin-published events.
import { Type, type Static } from '@sinclair/typebox';
import { Id } from '../envelope.js';

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
    owner_id: Type.Optional(Type.Union([Id(), Type.Null()], { description: 'The customer the event belongs to' })),
  },
  { additionalProperties: false },
);
export type PublishEventBody = Static<typeof PublishEventBody>;

export const PublishEventResult = Type.Object({
  event_id: Type.String({ format: 'uuid' }),
  deliveries: Type.Integer({ description: 'Deliveries durably queued for this event' }),
});
