// Schemas of subscriptions (CONTRACT section 4), shared by the daemon (validation,
// serialisation, docs) and the CLI (types).
import { Type, type Static } from '@sinclair/typebox';
import { Id, Timestamp } from '../envelope.js';
import { HOSTNAME_MAX_LENGTH } from '../hostname.js';

export const SubscriptionStatus = Type.Union([Type.Literal('active'), Type.Literal('suspended')], {
  description: '`suspended` subscriptions keep their sites but accept no new ones',
});

export const Subscription = Type.Object(
  {
    id: Type.Integer(),
    customer_id: Type.Integer({ description: 'The customer (user with role `customer`) who owns it' }),
    main_domain: Type.String({ description: 'Normalised host name (lower case, punycode)' }),
    is_default: Type.Boolean({ description: 'The subscription used when a customer omits `subscription_id`; one per customer' }),
    status: SubscriptionStatus,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Subscription' },
);
export type Subscription = Static<typeof Subscription>;

export const CreateSubscriptionBody = Type.Object(
  {
    customer_id: Id({ description: 'A user with role `customer`' }),
    main_domain: Type.String({ minLength: 1, maxLength: HOSTNAME_MAX_LENGTH + 1, description: 'Host name, e.g. example.com' }),
    is_default: Type.Optional(
      Type.Boolean({ description: 'Make it the customer\'s default (clears the previous one). A customer\'s first subscription is always the default.' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;
