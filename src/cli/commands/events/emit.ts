// `panelctl events emit EVENT [--owner ID] [--data key=value ...]`: publishes an event (admin),
// as the rest of the panel would. Fields the catalogue types as integers are sent as numbers.
import { Command } from 'commander';
import type { FieldType } from '../../../shared/events.js';
import { parseId, parseKeyValue } from '../../args.js';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';

export interface EventsEmitOptions {
  owner?: number;
  data?: Array<[string, string]>;
}

export function eventsEmitCommand(ctx: Context): Command {
  return new Command('emit')
    .description('publish an event to the subscribed endpoints (admin); data fields as key=value')
    .argument('<event>', 'event name (see panelctl events types)')
    .option('--owner <id>', 'id of the customer the event belongs to', parseId)
    .option('--data <key=value...>', 'data fields, e.g. --data site_id=7 domain=example.com', parseKeyValue)
    .action(async (event: string, options: EventsEmitOptions) => eventsEmitRun(ctx, event, options));
}

/** Builds `data`: integer catalogue fields become numbers; anything else stays a string for the daemon to judge. */
export function eventData(fields: Record<string, FieldType>, pairs: Array<[string, string]>): Record<string, string | number> {
  const data: Record<string, string | number> = {};
  for (const [key, value] of pairs) {
    if (key in data) throw new UsageError(`--data ${key} is given twice`);
    data[key] = fields[key] === 'integer' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  }
  return data;
}

export async function eventsEmitRun(ctx: Context, event: string, options: EventsEmitOptions): Promise<void> {
  // The catalogue (and TypeBox with it) is loaded only here, not when the command tree is built.
  const { eventType } = await import('../../../shared/events.js');
  const fields = eventType(event)?.fields ?? {};
  const body: { event: string; data: Record<string, string | number>; owner_id?: number } = { event, data: eventData(fields, options.data ?? []) };
  if (options.owner !== undefined) body.owner_id = options.owner;
  const { data } = await ctx.client().call<{ event_id: string; deliveries: number }>('POST', '/admin/events', body);
  await ctx.render(data, (ui, result) => {
    ui.record([
      ['event id', result.event_id],
      ['deliveries', String(result.deliveries)],
    ]);
    ui.success(`Published ${event} to ${result.deliveries} endpoint${result.deliveries === 1 ? '' : 's'}`);
  });
}
