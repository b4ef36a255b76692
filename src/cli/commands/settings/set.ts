// `panelctl settings set KEY VALUE`: VALUE is parsed by the setting's type (integer, boolean,
// one of a list) and sent as a partial update.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { parseSettingValue, settingKinds, unknownSetting } from './types.js';

export function settingsSetCommand(ctx: Context): Command {
  return new Command('set')
    .description('change one setting; applies without a daemon restart')
    .argument('<key>', 'setting name')
    .argument('<value>', 'new value (integer, true/false, or one of the listed words)')
    .action(async (key: string, value: string) => settingsSetRun(ctx, key, value));
}

export async function settingsSetRun(ctx: Context, key: string, text: string): Promise<void> {
  const kinds = await settingKinds();
  const kind = kinds[key];
  if (!kind) throw unknownSetting(key, kinds);
  const value = parseSettingValue(key, text, kind);
  const { data } = await ctx.client().call<Record<string, unknown>>('PUT', '/admin/settings', { [key]: value });
  await ctx.render(data, (ui, settings) => ui.success(`${key} = ${String(settings[key])}`));
}
