// Admin-tunable settings (CONTRACT section 3): names, defaults, and the schema that
// validates a partial update. Changes apply without a daemon restart.
import { Type, type Static } from '@sinclair/typebox';

export const RATE_LIMIT_MODES = ['both', 'requests', 'lockout'] as const;
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number];

export const SettingsSchema = Type.Object(
  {
    jwt_ttl_seconds: Type.Integer({ minimum: 60, maximum: 31_536_000, description: 'JWT lifetime in seconds' }),
    rate_limit_mode: Type.Union(RATE_LIMIT_MODES.map((m) => Type.Literal(m)), {
      description: '`requests` (variant A), `lockout` (variant B) or `both`',
    }),
    rate_limit_login_per_minute: Type.Integer({ minimum: 1, maximum: 100_000 }),
    rate_limit_reset_per_minute: Type.Integer({ minimum: 1, maximum: 100_000 }),
    rate_limit_user_per_minute: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    login_max_attempts: Type.Integer({ minimum: 1, maximum: 1000 }),
    login_lockout_minutes: Type.Integer({ minimum: 1, maximum: 10_080 }),
    totp_max_failures: Type.Integer({
      minimum: 0,
      maximum: 1000,
      description: 'Wrong two-factor codes for one account, from any address, that lock its second factor; 0 never',
    }),
    totp_lockout_minutes: Type.Integer({
      minimum: 1,
      maximum: 10_080,
      description: 'How long the wrong codes are counted, and how long the account stays locked',
    }),
    webhook_allow_private_networks: Type.Boolean(),
    webhook_disable_after_failures: Type.Integer({
      minimum: 0,
      maximum: 1000,
      description: 'Set an endpoint inactive after this many failed deliveries in a row; 0 never',
    }),
  },
  { additionalProperties: false, $id: 'Settings' },
);
export type Settings = Static<typeof SettingsSchema>;

export const SettingsPatchSchema = Type.Partial(Type.Omit(SettingsSchema, []), { additionalProperties: false });
export type SettingsPatch = Static<typeof SettingsPatchSchema>;

export const DEFAULT_SETTINGS: Settings = {
  jwt_ttl_seconds: 86_400,
  rate_limit_mode: 'both',
  rate_limit_login_per_minute: 10,
  rate_limit_reset_per_minute: 5,
  rate_limit_user_per_minute: 120,
  login_max_attempts: 5,
  login_lockout_minutes: 15,
  totp_max_failures: 10,
  totp_lockout_minutes: 15,
  webhook_allow_private_networks: false,
  webhook_disable_after_failures: 0,
};

export const SETTING_KEYS = Object.keys(DEFAULT_SETTINGS) as (keyof Settings)[];
