// `panelctl daemon start|stop|status|logs|install-service`.
import { family } from '../../family.js';
import { daemonInstallServiceCommand } from './install-service.js';
import { daemonLogsCommand } from './logs.js';
import { daemonStartCommand } from './start.js';
import { daemonStatusCommand } from './status.js';
import { daemonStopCommand } from './stop.js';

export const daemonCommand = family('daemon', 'run and control the panelctl daemon (API and webhook dispatcher)', {
  start: daemonStartCommand,
  stop: daemonStopCommand,
  status: daemonStatusCommand,
  logs: daemonLogsCommand,
  'install-service': daemonInstallServiceCommand,
});
