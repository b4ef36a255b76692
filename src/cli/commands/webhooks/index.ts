// `panelctl webhooks …`: endpoints, test deliveries and delivery logs.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { webhooksCreateCommand } from './create.js';
import { webhooksDeleteCommand } from './delete.js';
import { webhooksDeliveriesCommand } from './deliveries.js';
import { webhooksListCommand } from './list.js';
import { webhooksPauseCommand } from './pause.js';
import { webhooksRecoverCommand } from './recover.js';
import { webhooksRedeliverCommand } from './redeliver.js';
import { webhooksRotateSecretCommand } from './rotate-secret.js';
import { webhooksResumeCommand } from './resume.js';
import { webhooksShowCommand } from './show.js';
import { webhooksTestCommand } from './test.js';
import { webhooksDisableCommand, webhooksEnableCommand } from './toggle.js';
import { webhooksUpdateCommand } from './update.js';

export function webhooksCommand(ctx: Context): Command {
  return new Command('webhooks')
    .description('manage webhook endpoints, send test events, read and follow delivery logs')
    .addCommand(webhooksCreateCommand(ctx))
    .addCommand(webhooksListCommand(ctx))
    .addCommand(webhooksShowCommand(ctx))
    .addCommand(webhooksUpdateCommand(ctx))
    .addCommand(webhooksEnableCommand(ctx))
    .addCommand(webhooksDisableCommand(ctx))
    .addCommand(webhooksDeleteCommand(ctx))
    .addCommand(webhooksTestCommand(ctx))
    .addCommand(webhooksDeliveriesCommand(ctx))
    .addCommand(webhooksRedeliverCommand(ctx))
    .addCommand(webhooksRecoverCommand(ctx))
    .addCommand(webhooksRotateSecretCommand(ctx))
    .addCommand(webhooksPauseCommand(ctx))
    .addCommand(webhooksResumeCommand(ctx));
}
