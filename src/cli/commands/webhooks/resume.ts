// `panelctl webhooks resume ID`: PUT with only `paused: false`; the kept deliveries go first.
import { Command } from 'commander';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { webhooksSetPausedRun } from './pause.js';

export function webhooksResumeCommand(ctx: Context): Command {
  return new Command('resume')
    .description('resume a paused endpoint: the events kept meanwhile go out in publish order, then new ones')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksSetPausedRun(ctx, id, false));
}
