// `panelctl daemon start|stop|status|logs|install-service`.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { daemonInstallServiceCommand } from './install-service.js';
import { daemonLogsCommand } from './logs.js';
import { daemonStartCommand } from './start.js';
import { daemonStatusCommand } from './status.js';
import { daemonStopCommand } from './stop.js';

export function daemonCommand(ctx: Context): Command {
  return new Command('daemon')
    .description('run and control the panelctl daemon (API and webhook dispatcher)')
    .addCommand(daemonStartCommand(ctx))
    .addCommand(daemonStopCommand(ctx))
    .addCommand(daemonStatusCommand(ctx))
    .addCommand(daemonLogsCommand(ctx))
    .addCommand(daemonInstallServiceCommand(ctx));
}
