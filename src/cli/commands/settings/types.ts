// The type of each setting, read from the shared TypeBox schema (src/shared/settings.ts), so a
// value typed on the command line is sent as the JSON type the daemon expects.
import type { TSchema } from '@sinclair/typebox';
import { UsageError } from '../../errors.js';

export type SettingKind = { kind: 'integer'; minimum?: number; maximum?: number } | { kind: 'boolean' } | { kind: 'enum'; values: string[] } | { kind: 'string' };

export async function settingKinds(): Promise<Record<string, SettingKind>> {
  const { SettingsSchema } = await import('../../../shared/settings.js');
  const kinds: Record<string, SettingKind> = {};
  for (const [key, schema] of Object.entries(SettingsSchema.properties as Record<string, TSchema>)) {
    if (schema.type === 'integer') kinds[key] = { kind: 'integer', minimum: schema.minimum, maximum: schema.maximum };
    else if (schema.type === 'boolean') kinds[key] = { kind: 'boolean' };
    else if (Array.isArray(schema.anyOf)) kinds[key] = { kind: 'enum', values: schema.anyOf.map((s: TSchema) => String(s.const)) };
    else kinds[key] = { kind: 'string' };
  }
  return kinds;
}

export function unknownSetting(key: string, kinds: Record<string, SettingKind>): UsageError {
  return new UsageError(`unknown setting "${key}"; settings: ${Object.keys(kinds).join(', ')}`);
}

const TRUE = new Set(['true', 'yes', 'on', '1']);
const FALSE = new Set(['false', 'no', 'off', '0']);

/** The command-line text as the setting's JSON value; a usage error names the expected form. */
export function parseSettingValue(key: string, text: string, kind: SettingKind): number | boolean | string {
  const value = text.trim();
  switch (kind.kind) {
    case 'integer': {
      if (!/^-?\d+$/.test(value)) throw new UsageError(`${key} takes an integer, got "${text}"`);
      return Number(value);
    }
    case 'boolean': {
      if (TRUE.has(value.toLowerCase())) return true;
      if (FALSE.has(value.toLowerCase())) return false;
      throw new UsageError(`${key} takes true or false, got "${text}"`);
    }
    case 'enum': {
      if (!kind.values.includes(value)) throw new UsageError(`${key} takes one of ${kind.values.join(', ')}, got "${text}"`);
      return value;
    }
    default:
      return text;
  }
}
