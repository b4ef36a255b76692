// The man page panelctl(1): synopsis, global options and every command with its options come
// from the command tree; description, environment, files, exit status and examples are
// written by hand below. Plain man(7) macros, checked with `groff -man -ww -z`.
import { VERSION } from '../../shared/version.js';
import { allCommands, argSynopsis, type CommandSpec, type OptionSpec } from './tree.js';

/** Escapes text for roff: backslashes, hyphens (so they stay ASCII), control characters at line start. */
export function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .split('\n')
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join('\n');
}

const B = (text: string) => `\\fB${roff(text)}\\fR`;
const I = (text: string) => `\\fI${roff(text)}\\fR`;

function optionTag(option: OptionSpec): string {
  const names = [option.short, option.long].filter(Boolean).map((n) => B(n!)).join(', ');
  return option.valueName ? `${names} ${I(option.valueName)}` : names;
}

function optionBody(option: OptionSpec): string {
  const notes: string[] = [];
  if (option.hint.kind === 'words' && option.long !== '--events') notes.push(`one of: ${option.hint.words.join(', ')}`);
  if (option.mandatory) notes.push('required');
  if (option.defaultValue !== undefined) notes.push(`default: ${option.defaultValue}`);
  if (option.envVar) notes.push(`environment: ${option.envVar}`);
  const text = option.description.replace(/\.$/, '');
  return roff(capitalise(notes.length ? `${text} (${notes.join("; ")}).` : `${text}.`));
}

function synopsisOf(command: CommandSpec): string {
  const parts = [B(['panelctl', ...command.path].join(' '))];
  for (const option of command.options) {
    if (option.mandatory) parts.push(`${B(option.long)} ${I(option.valueName ?? 'value')}`);
  }
  const optional = command.options.filter((o) => !o.mandatory && o.long !== '--help');
  if (optional.length) parts.push('[\\fIoptions\\fR]');
  for (const arg of command.args) parts.push(roff(argSynopsis(arg)).replace(/<([^>]+)>/g, '\\fI$1\\fR'));
  return parts.join(' ');
}

function commandSection(command: CommandSpec): string {
  const lines = [`.SS "${command.path.join(' ')}"`, synopsisOf(command), '.PP', `${roff(capitalise(command.description))}.`];
  for (const arg of command.args) {
    if (!arg.description) continue;
    const words = arg.hint.kind === 'words' ? ` (one of: ${arg.hint.words.join(', ')})` : '';
    lines.push('.TP', I(arg.name), `${roff(capitalise(arg.description) + words)}.`);
  }
  for (const option of command.options) {
    if (option.long === '--help') continue;
    lines.push('.TP', optionTag(option), optionBody(option));
  }
  return lines.join('\n');
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const DESCRIPTION = String.raw`
.B panelctl
is the command-line client of a hosting panel and the program that runs its daemon.
The daemon
(\fBpanelctl daemon start\fR)
serves the panel's JSON REST API under
.I /api/v1
on one HTTPS port (3443 by default) and, in the same process, sends signed webhooks
(HMAC\-SHA256 in
.BR X\-Webhook\-Signature )
to the endpoints customers register, retrying a failed delivery once after two seconds
and logging every attempt.
.PP
Every other command talks to the daemon over HTTPS, as any API client would, and never
touches its data directory (except
.BR init ,
which refuses while a daemon runs).
The daemon's self\-signed certificate is verified against the data directory's
.I tls/cert.pem
(or
.BR \-\-ca );
verification is never turned off.
.PP
.B panelctl login
keeps the daemon URL and a session token (JWT) in the configuration file; scripts can pass
an API key with
.B \-\-token
or
.B PANELCTL_TOKEN
instead.
.PP
On a terminal, output is coloured and tabular; when piped it is plain text (tables become
tab\-separated lines without a header).
With
.B \-\-json
only the answer's
.I data
is printed, as JSON, on standard output
(\fBwebhooks deliveries \-\-follow\fR prints one JSON object per line).
Messages, warnings and errors go to standard error, one line per error with a hint.
Secrets that the daemon does not keep (a new API key, a generated webhook secret or password)
are shown once, with a warning.`.trim();

const ENVIRONMENT = String.raw`
.TP
.B PANELCTL_URL
Daemon URL, as \fB\-\-url\fR.
.TP
.B PANELCTL_TOKEN
JWT or API key to authenticate with, as \fB\-\-token\fR; overrides the stored login.
.TP
.B PANELCTL_CA
CA certificate file to trust, as \fB\-\-ca\fR.
.TP
.B PANEL_DATA_DIR
Data directory, as \fB\-\-data\-dir\fR.
.TP
.B PANELCTL_CONFIG_DIR
Directory of the configuration file (default \fI$XDG_CONFIG_HOME/panelctl\fR).
.TP
.B XDG_CONFIG_HOME
Base of the configuration directory (default \fI~/.config\fR).
.TP
.B XDG_DATA_HOME
Base of the default data directory (default \fI~/.local/share\fR).
.TP
.B NO_COLOR
When set and not empty, no colours (as \fB\-\-no\-color\fR).
.TP
.B NODE_EXTRA_CA_CERTS
Extra CA certificates the daemon trusts for outgoing webhook deliveries.`.trim();

const FILES = String.raw`
.TP
.I ~/.config/panelctl/config.json
The stored login: daemon URL, session token, email and the CA file trusted at login.
Mode 0600, in a directory of mode 0700.
The token is sent only to the URL it was issued by.
.TP
.I ~/.local/share/panelctl/
The data directory (mode 0700): \fIstore.json\fR, \fIoutbox.jsonl\fR,
\fIdeliveries/\fR, \fIjwt\-secret\fR, \fItls/cert.pem\fR and \fItls/key.pem\fR,
\fIdaemon.pid\fR, \fIdaemon.json\fR, \fIdaemon.log\fR and \fImail/\fR.
Files holding secrets are mode 0600.`.trim();

const EXIT_STATUS = String.raw`
.TP
.B 0
Success.
.TP
.B 1
Error: the API answered with an error, the daemon could not be reached, or a test delivery failed.
.TP
.B 2
Usage error: unknown command or option, missing or malformed argument.
.TP
.B 4
Authentication required or refused (HTTP 401 or 403): run \fBpanelctl login\fR.`.trim();

const EXAMPLES = String.raw`
Start the daemon and log in:
.PP
.RS
.nf
panelctl daemon start
printf '%s\en' "$PASSWORD" | panelctl login \-\-email admin@localhost \-\-password\-stdin
.fi
.RE
.PP
Create an API key for a script, valid 90 days, and keep it:
.PP
.RS
.nf
panelctl keys create billing \-\-expires\-in 90d \-\-json | jq \-r .key
.fi
.RE
.PP
Register a webhook with a generated secret, test it and follow its deliveries:
.PP
.RS
.nf
panelctl webhooks create \-\-url https://hooks.example.com/panel \e
    \-\-events 'site.created,site.deleted' \-\-generate\-secret
panelctl webhooks test 1
panelctl webhooks deliveries 1 \-\-follow \-\-json
.fi
.RE
.PP
Publish an event as the panel would (admin):
.PP
.RS
.nf
panelctl events emit site.created \-\-owner 2 \-\-data site_id=7 domain=example.com
.fi
.RE
.PP
Install completions for bash (the bash\-completion package loads them on first use):
.PP
.RS
.nf
mkdir \-p ~/.local/share/bash\-completion/completions && panelctl completion bash > ~/.local/share/bash\-completion/completions/panelctl
.fi
.RE`.trim();

export function manPage(root: CommandSpec): string {
  const commands = allCommands(root).filter((c) => c !== root && c.subcommands.length === 0);
  const globals = root.options.filter((o) => o.long !== '--help');
  return [
    `.\\" panelctl(1), generated from the command tree by \`npm run gen:docs\`; do not edit.`,
    `.TH PANELCTL 1 "" "panelctl ${VERSION}" "User Commands"`,
    '.SH NAME',
    `panelctl \\- ${roff(root.description)}`,
    '.SH SYNOPSIS',
    `${B('panelctl')} [\\fIglobal options\\fR] \\fIcommand\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]`,
    '.SH DESCRIPTION',
    DESCRIPTION,
    '.SH GLOBAL OPTIONS',
    'These options are accepted before the command, and after it unless the command has an option of the same name:',
    'after \\fBwebhooks create\\fR, \\fB\\-\\-url\\fR is the endpoint\\(aqs URL, so give the daemon\\(aqs URL before the command or in \\fBPANELCTL_URL\\fR.',
    ...globals.flatMap((o) => ['.TP', optionTag(o), optionBody(o)]),
    '.TP',
    `${B('-h')}, ${B('--help')}`,
    'Show the help of a command.',
    '.SH COMMANDS',
    ...commands.map(commandSection),
    '.SH ENVIRONMENT',
    ENVIRONMENT,
    '.SH FILES',
    FILES,
    '.SH EXIT STATUS',
    EXIT_STATUS,
    '.SH EXAMPLES',
    EXAMPLES,
    '.SH SEE ALSO',
    'The API reference served by the daemon at \\fIhttps://127.0.0.1:3443/api/docs\\fR.',
    '',
  ].join('\n');
}
