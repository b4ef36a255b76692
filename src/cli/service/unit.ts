// The systemd unit of `panelctl daemon install-service`, as text: pure, so a test can hand it
// to `systemd-analyze verify`. The daemon runs in the foreground under systemd (which restarts
// it, stops it with SIGTERM and keeps its output in the journal); the database URL, a secret,
// comes from an EnvironmentFile (0600), never from the unit, which anyone may read.

export interface UnitOptions {
  /** A user unit (systemctl --user), else a system one. */
  user: boolean;
  /** node, then the panelctl script: what ExecStart runs. */
  node: string;
  script: string;
  dataDir: string;
  /** Extra `daemon start` arguments (host, port, TLS, private webhooks, log level). */
  startArgs: string[];
  /** The EnvironmentFile (optional at run time: `-` prefix). */
  environmentFile: string;
  /** A system unit's User= (the data directory's owner); omitted for root or user units. */
  runAs?: string;
  /** --port below 1024: the one capability that binding it needs (system units). */
  privilegedPort?: boolean;
}

export const UNIT_NAME = 'panelctl.service';

/** How long the unit's start waits for readiness (a large JSON store replays its journal first). */
export const READY_WAIT_SECONDS = 90;

/**
 * One argument in systemd's command-line syntax: `%` and `$` escaped (specifiers, variables),
 * double-quoted when it holds whitespace, quotes or backslashes.
 *
 * @example
 * systemdQuote('/srv/panel data') // '"/srv/panel data"'
 */
export function systemdQuote(arg: string): string {
  const escaped = arg.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  if (escaped !== '' && !/[\s"'\\;]/.test(escaped)) return escaped;
  return `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** A path in a space-separated list setting (ReadWritePaths=): `%` escaped, quoted when it has spaces. */
function listPath(path: string): string {
  const escaped = path.replace(/%/g, '%%');
  return /\s/.test(escaped) ? `"${escaped}"` : escaped;
}

/**
 * @example
 * renderUnit({ user: false, node: '/usr/bin/node', script: '/opt/panelctl/bin/panelctl.js', dataDir: '/var/lib/panelctl',
 *   startArgs: [], environmentFile: '/var/lib/panelctl/service.env', runAs: 'panelctl' })
 */
export function renderUnit(options: UnitOptions): string {
  const exec = [options.node, options.script, 'daemon', 'start', '--foreground', '--data-dir', options.dataDir, ...options.startArgs]
    .map(systemdQuote)
    .join(' ');
  const ready = [options.node, options.script, 'daemon', 'status', '--data-dir', options.dataDir, '--wait-ready', String(READY_WAIT_SECONDS)]
    .map(systemdQuote)
    .join(' ');
  const lines = [
    '# panelctl daemon: the hosting-panel API and webhook dispatcher.',
    '# Written by `panelctl daemon install-service`; the database URL (if any) is in the EnvironmentFile.',
    '[Unit]',
    'Description=panelctl daemon (hosting-panel API and webhook dispatcher)',
    ...(options.user ? [] : ['Wants=network-online.target', 'After=network-online.target']),
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    // Started means ready: the start job ends once GET /health/ready answers 200, so units
    // ordered After= this one (and `systemctl start` itself) wait for a daemon that serves.
    `ExecStartPost=${ready}`,
    `TimeoutStartSec=${READY_WAIT_SECONDS + 30}s`,
    `EnvironmentFile=-${options.environmentFile.replace(/%/g, '%%')}`,
    ...(options.runAs ? [`User=${options.runAs}`] : []),
    'Restart=on-failure',
    'RestartSec=2s',
    // A clean stop lets in-flight deliveries finish (each attempt times out well within this).
    'KillSignal=SIGTERM',
    'TimeoutStopSec=45s',
    'UMask=0077',
    '',
    '# Hardening: the daemon needs its data directory, the network, and nothing else.',
    'NoNewPrivileges=yes',
    ...(options.user
      ? [
          // In a user manager, the file-system sandbox needs a user namespace (implied by newer systemd).
          'PrivateUsers=yes',
        ]
      : []),
    'ProtectSystem=strict',
    'ProtectHome=read-only',
    `ReadWritePaths=${listPath(options.dataDir)}`,
    'PrivateTmp=yes',
    ...(options.user
      ? []
      : [
          'PrivateDevices=yes',
          'ProtectKernelTunables=yes',
          'ProtectKernelModules=yes',
          'ProtectKernelLogs=yes',
          'ProtectControlGroups=yes',
          'ProtectClock=yes',
          'ProtectHostname=yes',
          'RestrictNamespaces=yes',
          'RestrictRealtime=yes',
          'RestrictSUIDSGID=yes',
          'LockPersonality=yes',
          'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX',
          'SystemCallArchitectures=native',
          // Binding 3443 needs no capability; a port below 1024 needs CAP_NET_BIND_SERVICE.
          ...(options.privilegedPort
            ? ['CapabilityBoundingSet=CAP_NET_BIND_SERVICE', 'AmbientCapabilities=CAP_NET_BIND_SERVICE']
            : ['CapabilityBoundingSet=']),
        ]),
    '',
    '[Install]',
    `WantedBy=${options.user ? 'default.target' : 'multi-user.target'}`,
    '',
  ];
  return lines.join('\n');
}

/**
 * The EnvironmentFile's text: PANELCTL_DATABASE_URL, quoted as systemd reads it.
 *
 * @example
 * renderEnvironment('postgres://panel:s3cret@db/panel') // 'PANELCTL_DATABASE_URL="postgres://panel:s3cret@db/panel"\n'
 */
export function renderEnvironment(databaseUrl: string): string {
  return `PANELCTL_DATABASE_URL="${databaseUrl.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"\n`;
}
