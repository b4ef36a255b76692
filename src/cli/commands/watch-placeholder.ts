// Stands in for `panelctl watch` until the TUI (src/cli/commands/watch.ts, owned by the TUI
// work) is registered in program.ts in its place.
import { Command } from 'commander';
import { CliError } from '../errors.js';

export function watchPlaceholderCommand(): Command {
  return new Command('watch').description('live view of webhook deliveries (terminal UI)').action(() => {
    throw new CliError('panelctl watch is not available in this build; use panelctl webhooks deliveries ID --follow');
  });
}
