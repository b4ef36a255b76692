// Schemas of websites (section 4.2, CONTRACT section 4), shared by the daemon and the CLI.
import { Type, type Static } from '@sinclair/typebox';
import { Id, Timestamp } from '../envelope.js';
import { HOSTNAME_MAX_LENGTH } from '../hostname.js';
import { PageFields } from './pages.js';

export const Site = Type.Object(
  {
    id: Type.Integer(),
    subscription_id: Type.Integer(),
    domain: Type.String({ description: 'Normalised host name (lower case, punycode)' }),
    created_at: Timestamp,
  },
  { $id: 'Site' },
);
export type Site = Static<typeof Site>;

/** The subscription context (section 2.7; absent: the caller's default, or everything for an admin) and the page. */
export const ListSitesQuery = Type.Object(
  {
    subscription_id: Type.Optional(
      Id({ description: 'Decimal subscription id. Absent: a customer\'s default subscription; for an admin, all subscriptions.' }),
    ),
    ...PageFields,
  },
  { additionalProperties: false },
);
export type ListSitesQuery = Static<typeof ListSitesQuery>;

export const CreateSiteBody = Type.Object(
  {
    domain: Type.String({ minLength: 1, maxLength: HOSTNAME_MAX_LENGTH + 1, description: 'Host name, e.g. www.example.com' }),
    subscription_id: Type.Optional(
      Id({ description: 'Absent: the customer\'s default subscription. Required for admins.' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateSiteBody = Static<typeof CreateSiteBody>;
