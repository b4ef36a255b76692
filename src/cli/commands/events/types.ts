// `panelctl events types`: the daemon's event catalogue (GET /events/types).
import { Command } from 'commander';
import type { EventTypeInfo } from '../../api-types.js';
import type { Context } from '../../context.js';

export function eventsTypesCommand(ctx: Context): Command {
  return new Command('types').description('list the event names, their meaning and data fields').action(async () => eventsTypesRun(ctx));
}

export async function eventsTypesRun(ctx: Context): Promise<void> {
  const { data } = await ctx.client().call<EventTypeInfo[]>('GET', '/events/types');
  await ctx.render(data, (ui, types) =>
    ui.table(types, [
      { header: 'event', value: (t) => t.name, style: (text) => ui.c.bold(text) },
      { header: 'data fields', value: (t) => Object.entries(t.fields).map(([name, type]) => `${name}:${type}`).join(', ') },
      { header: 'description', value: (t) => t.description, shrink: true },
    ]),
  );
}
