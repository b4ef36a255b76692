// What every command needs, created lazily: output streams, global options, the data
// directory, stored login (conf) and the API client. Commands receive it instead of
// reaching for process globals, so tests can run them with fake IO.
import { join } from 'node:path';
import { homedir } from 'node:os';
import type { Command } from 'commander';
import { layout, resolveDataDir, DEFAULT_PORT, DEFAULT_HOST } from '../shared/paths.js';
import { ApiClient } from './api-client.js';
import { CliError } from './errors.js';
import { EXIT } from '../shared/errors.js';

export interface GlobalOptions {
  url?: string;
  token?: string;
  ca?: string;
  dataDir?: string;
  json?: boolean;
  color?: boolean;
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

export interface StoredLogin {
  url: string;
  token: string;
  email?: string;
  ca?: string;
}

export class Context {
  #client: ApiClient | null = null;
  #config: Promise<import('conf').default<{ login?: StoredLogin }>> | null = null;

  constructor(
    readonly program: Command,
    readonly io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env },
  ) {}

  get globals(): GlobalOptions {
    return this.program.opts<GlobalOptions>();
  }

  get env(): NodeJS.ProcessEnv {
    return this.io.env;
  }

  get json(): boolean {
    return Boolean(this.globals.json);
  }

  dataDir(): string {
    return resolveDataDir(this.globals.dataDir, this.env);
  }

  configDir(): string {
    if (this.env.PANELCTL_CONFIG_DIR) return this.env.PANELCTL_CONFIG_DIR;
    const xdg = this.env.XDG_CONFIG_HOME || join(homedir(), '.config');
    return join(xdg, 'panelctl');
  }

  /** The conf store of the login (URL, token), file mode 0600. Imported lazily. */
  config(): Promise<import('conf').default<{ login?: StoredLogin }>> {
    this.#config ??= import('conf').then(
      ({ default: Conf }) =>
        new Conf<{ login?: StoredLogin }>({
          cwd: this.configDir(),
          configName: 'config',
          projectName: 'panelctl',
          configFileMode: 0o600,
        }),
    );
    return this.#config;
  }

  async storedLogin(): Promise<StoredLogin | undefined> {
    return (await this.config()).get('login');
  }

  /** --url, PANELCTL_URL, the stored login's URL, else the default local daemon. */
  async baseUrl(): Promise<string> {
    const explicit = this.globals.url ?? this.env.PANELCTL_URL;
    if (explicit) return explicit;
    const stored = await this.storedLogin().catch(() => undefined);
    return stored?.url ?? `https://${DEFAULT_HOST}:${DEFAULT_PORT}`;
  }

  caFile(): string {
    return this.globals.ca ?? this.env.PANELCTL_CA ?? layout(this.dataDir()).cert;
  }

  /** An API client with the token from --token, PANELCTL_TOKEN or the stored login. */
  async client(options: { requireToken?: boolean } = {}): Promise<ApiClient> {
    if (this.#client) return this.#client;
    const token = this.globals.token ?? this.env.PANELCTL_TOKEN ?? (await this.storedLogin().catch(() => undefined))?.token;
    if (options.requireToken !== false && !token) {
      throw new CliError('not logged in: run panelctl login (or pass --token / PANELCTL_TOKEN)', EXIT.AUTH);
    }
    this.#client = new ApiClient({ baseUrl: await this.baseUrl(), token, caFile: this.caFile() });
    return this.#client;
  }

  out(line: string): void {
    this.io.stdout.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  err(line: string): void {
    this.io.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  /** `--json`: only the data, as JSON, on stdout. */
  printJson(data: unknown): void {
    this.io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
  }

  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }

  async close(): Promise<void> {
    await this.#client?.close();
  }
}
