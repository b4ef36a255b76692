// Schemas of users and login, shared by the daemon (validation, serialisation, docs) and the CLI (types).
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from '../envelope.js';

export const Role = Type.Union([Type.Literal('admin'), Type.Literal('customer')], { description: 'Account role' });

export const User = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    name: Type.String(),
    role: Role,
  },
  { $id: 'User' },
);
export type User = Static<typeof User>;

export const UserDetail = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  name: Type.String(),
  role: Role,
  two_factor_enabled: Type.Boolean(),
  created_at: Timestamp,
});
export type UserDetail = Static<typeof UserDetail>;

export const LoginBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    totp_code: Type.Optional(Type.String({ maxLength: 16, description: 'Only when 2FA is enabled' })),
  },
  { additionalProperties: false },
);
export type LoginBody = Static<typeof LoginBody>;

export const LoginResult = Type.Object({ token: Type.String({ description: 'JWT (HS256)' }), user: User });
export type LoginResult = Static<typeof LoginResult>;

export const CreateUserBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
    role: Role,
  },
  { additionalProperties: false },
);
export type CreateUserBody = Static<typeof CreateUserBody>;
