// `panelctl daemon install-service [--user] [--print]`: a systemd unit that runs this panelctl's
// `daemon start --foreground` on the current data directory. --print writes it to stdout; else
// it goes to /etc/systemd/system (or ~/.config/systemd/user with --user), the database URL (if
// any) to DATA_DIR/service.env (0600), and the command prints how to enable it.
import { mkdir, stat, writeFile, chmod } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { DEFAULT_PORT } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import { renderEnvironment, renderUnit, UNIT_NAME } from '../../service/unit.js';

export interface InstallServiceOptions {
  user?: boolean;
  print?: boolean;
  databaseUrl?: string;
  host?: string;
  port?: string;
  tls: boolean;
  tlsCert?: string;
  tlsKey?: string;
  allowPrivateWebhooks?: boolean;
  logLevel?: string;
  metricsPort?: string;
  metricsHost?: string;
}

export function daemonInstallServiceCommand(ctx: Context): Command {
  return new Command('install-service')
    .description('write a systemd unit running the daemon on this data directory (--print: to stdout)')
    .option('--user', 'a user unit (~/.config/systemd/user, systemctl --user) instead of a system one (/etc/systemd/system)')
    .option('--print', 'print the unit instead of writing it')
    .option('--database-url <url>', 'PostgreSQL store URL for the service (PANELCTL_DATABASE_URL); kept in DATA_DIR/service.env (0600), not in the unit')
    .option('--host <host>', 'daemon start --host for the service')
    .option('--port <port>', 'daemon start --port for the service')
    .option('--no-tls', 'daemon start --no-tls for the service')
    .option('--tls-cert <file>', 'daemon start --tls-cert for the service')
    .option('--tls-key <file>', 'daemon start --tls-key for the service')
    .option('--allow-private-webhooks', 'daemon start --allow-private-webhooks for the service')
    .addOption(new Option('--log-level <level>', 'daemon start --log-level for the service').choices(['fatal', 'error', 'warn', 'info', 'debug']))
    .option('--metrics-port <port>', 'daemon start --metrics-port for the service: Prometheus metrics at http://127.0.0.1:PORT/metrics')
    .option('--metrics-host <host>', 'daemon start --metrics-host for the service')
    .action(async (options: InstallServiceOptions) => daemonInstallServiceRun(ctx, options));
}

/** The user owning `path` by name, from /etc/passwd; undefined for root or when unknown. */
function ownerName(uid: number): string | undefined {
  if (uid === 0) return undefined;
  if (uid === process.getuid?.()) return userInfo().username;
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((entry) => entry.split(':')[2] === String(uid));
    return line?.split(':')[0];
  } catch {
    return undefined;
  }
}

export function startArgsOf(options: InstallServiceOptions): string[] {
  const args: string[] = [];
  if (options.host) args.push('--host', options.host);
  if (options.port) {
    const port = Number(options.port);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new UsageError(`--port must be an integer from 1 to 65535, got "${options.port}"`);
    args.push('--port', String(port));
  }
  if (!options.tls) args.push('--no-tls');
  if (Boolean(options.tlsCert) !== Boolean(options.tlsKey)) throw new UsageError('--tls-cert and --tls-key go together');
  if (options.tlsCert) args.push('--tls-cert', options.tlsCert, '--tls-key', options.tlsKey!);
  if (options.allowPrivateWebhooks) args.push('--allow-private-webhooks');
  if (options.logLevel) args.push('--log-level', options.logLevel);
  if (options.metricsPort !== undefined) {
    const port = Number(options.metricsPort);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new UsageError(`--metrics-port must be an integer from 1 to 65535, got "${options.metricsPort}"`);
    args.push('--metrics-port', String(port));
  }
  if (options.metricsHost) {
    if (options.metricsPort === undefined) throw new UsageError('--metrics-host needs --metrics-port');
    args.push('--metrics-host', options.metricsHost);
  }
  return args;
}

export async function daemonInstallServiceRun(ctx: Context, options: InstallServiceOptions): Promise<void> {
  const user = Boolean(options.user);
  const dataDir = ctx.dataDir();
  const environmentFile = join(dataDir, 'service.env');
  const databaseUrl = options.databaseUrl ?? ctx.env.PANELCTL_DATABASE_URL;
  const owner = await stat(dataDir).then(
    (info) => info.uid,
    () => undefined,
  );
  const unit = renderUnit({
    user,
    node: process.execPath,
    script: fileURLToPath(new URL('../../../../bin/panelctl.js', import.meta.url)),
    dataDir,
    startArgs: startArgsOf(options),
    environmentFile,
    runAs: user || owner === undefined ? undefined : ownerName(owner),
    privilegedPort: Number(options.port ?? DEFAULT_PORT) < 1024,
  });
  if (owner === undefined) {
    ctx.err(`note: ${dataDir} does not exist yet: run panelctl init --data-dir ${dataDir} first (as the user the service runs as), or the admin password generated at the first start goes to the journal`);
  }
  if (options.print) {
    ctx.io.stdout.write(unit);
    if (databaseUrl) ctx.err(`note: the unit reads PANELCTL_DATABASE_URL from ${environmentFile} (mode 0600); without --print it is written there`);
    return;
  }

  const unitDir = user ? join(ctx.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'systemd', 'user') : '/etc/systemd/system';
  const unitFile = join(unitDir, UNIT_NAME);
  try {
    await mkdir(unitDir, { recursive: true });
    await writeFile(unitFile, unit, { mode: 0o644 });
    if (databaseUrl) {
      await writeFile(environmentFile, renderEnvironment(databaseUrl), { mode: 0o600 });
      await chmod(environmentFile, 0o600);
    }
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const hint = err.code === 'EACCES' || err.code === 'EPERM' ? (user ? '' : ': run it as root (sudo), or use --user for a user unit') : '';
    throw new CliError(`cannot write ${err.path ?? unitFile}: ${err.code ?? err.message}${hint}`, EXIT.ERROR);
  }
  const systemctl = user ? 'systemctl --user' : 'systemctl';
  const lines = [`Wrote ${unitFile}`];
  if (databaseUrl) lines.push(`Wrote ${environmentFile} (PANELCTL_DATABASE_URL, mode 0600)`);
  lines.push('Enable and start it (stop a daemon started by hand first: panelctl daemon stop):');
  lines.push(`  ${systemctl} daemon-reload && ${systemctl} enable --now ${UNIT_NAME}`);
  if (user) lines.push(`To keep it running while you are logged out: loginctl enable-linger ${userInfo().username}`);
  lines.push(`Its log: journalctl ${user ? '--user ' : ''}-u ${UNIT_NAME} -f`);
  ctx.out(lines.join('\n'));
}
