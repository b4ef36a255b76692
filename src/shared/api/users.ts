// Schemas of users and login, shared by the daemon (validation, serialisation, docs) and the CLI (types).
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from '../envelope.js';
import { EMAIL_MAX_LENGTH } from '../email.js';

/** An email address (shared/email.ts): the daemon's `email` format accepts single-label domains. */
export const Email = Type.String({
  format: 'email',
  maxLength: EMAIL_MAX_LENGTH,
  description: 'An email address; single-label domains such as `admin@localhost` are accepted',
});

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
    email: Email,
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
    email: Email,
    name: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
    role: Role,
  },
  { additionalProperties: false },
);
export type CreateUserBody = Static<typeof CreateUserBody>;

export const TotpCodeBody = Type.Object(
  { totp_code: Type.String({ minLength: 1, maxLength: 16, description: 'The current 6-digit code of the authenticator app' }) },
  { additionalProperties: false },
);
export type TotpCodeBody = Static<typeof TotpCodeBody>;

export const TwoFactorSetup = Type.Object({
  secret: Type.String({ description: 'Base32 TOTP secret (SHA-1, 6 digits, 30 s), to type into an authenticator app' }),
  otpauth_url: Type.String({ description: 'otpauth:// URL with the same secret, for a QR code' }),
});
export type TwoFactorSetup = Static<typeof TwoFactorSetup>;

export const TwoFactorState = Type.Object({ two_factor_enabled: Type.Boolean() });
export type TwoFactorState = Static<typeof TwoFactorState>;

export const ForgotPasswordBody = Type.Object(
  { email: Email },
  { additionalProperties: false },
);
export type ForgotPasswordBody = Static<typeof ForgotPasswordBody>;

export const ResetPasswordBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 256, description: 'The token from the reset mail' }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export type ResetPasswordBody = Static<typeof ResetPasswordBody>;

export const SetPasswordBody = Type.Object(
  { password: Type.String({ minLength: 8, maxLength: 1024, description: 'The new password' }) },
  { additionalProperties: false },
);
export type SetPasswordBody = Static<typeof SetPasswordBody>;
