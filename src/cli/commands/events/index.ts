// `panelctl events types|emit`: the event catalogue, and publishing an event (admin).
import { family } from '../../family.js';
import { eventsEmitCommand } from './emit.js';
import { eventsTypesCommand } from './types.js';

export const eventsCommand = family('events', 'list the event catalogue and publish events (admin)', {
  types: eventsTypesCommand,
  emit: eventsEmitCommand,
});
