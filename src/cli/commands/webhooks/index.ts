// `panelctl webhooks …`: endpoints, test deliveries and delivery logs.
import { family } from '../../family.js';
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

export const webhooksCommand = family('webhooks', 'manage webhook endpoints, send test events, read and follow delivery logs', {
  create: webhooksCreateCommand,
  list: webhooksListCommand,
  show: webhooksShowCommand,
  update: webhooksUpdateCommand,
  enable: webhooksEnableCommand,
  disable: webhooksDisableCommand,
  delete: webhooksDeleteCommand,
  test: webhooksTestCommand,
  deliveries: webhooksDeliveriesCommand,
  redeliver: webhooksRedeliverCommand,
  recover: webhooksRecoverCommand,
  'rotate-secret': webhooksRotateSecretCommand,
  pause: webhooksPauseCommand,
  resume: webhooksResumeCommand,
});
