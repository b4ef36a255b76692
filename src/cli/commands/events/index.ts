// `panelctl events types|emit`: the event catalogue, and publishing an event (admin).
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { eventsEmitCommand } from './emit.js';
import { eventsTypesCommand } from './types.js';

export function eventsCommand(ctx: Context): Command {
  return new Command('events')
    .description('list the event catalogue and publish events (admin)')
    .addCommand(eventsTypesCommand(ctx))
    .addCommand(eventsEmitCommand(ctx));
}
