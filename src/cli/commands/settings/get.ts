// `panelctl settings get [KEY]`: all settings, or the value of one.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { settingKinds, unknownSetting } from './types.js';

export function settingsGetCommand(ctx: Context): Command {
  return new Command('get')
    .description('show all settings, or the value of KEY')
    .argument('[key]', 'setting name')
    .action(async (key: string | undefined) => settingsGetRun(ctx, key));
}

export async function settingsGetRun(ctx: Context, key?: string): Promise<void> {
  if (key) {
    const kinds = await settingKinds();
    if (!(key in kinds)) throw unknownSetting(key, kinds);
  }
  const { data } = await ctx.client().call<Record<string, unknown>>('GET', '/admin/settings');
  if (key) {
    // One value: as JSON with --json (a number, boolean or string), else as plain text.
    if (ctx.json) ctx.printJson(data[key]);
    else ctx.out(String(data[key]));
    return;
  }
  await ctx.render(data, (ui, settings) => ui.record(Object.entries(settings).map(([name, value]) => [name, String(value)])));
}
