// `panelctl keys create|list|delete`: API keys for scripts (need a login session, not a key).
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { keysCreateCommand } from './create.js';
import { keysDeleteCommand } from './delete.js';
import { keysListCommand } from './list.js';

export function keysCommand(ctx: Context): Command {
  return new Command('keys')
    .description('create, list and delete API keys (requires a login session)')
    .addCommand(keysCreateCommand(ctx))
    .addCommand(keysListCommand(ctx))
    .addCommand(keysDeleteCommand(ctx));
}
