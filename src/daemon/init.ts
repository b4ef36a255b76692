// `panelctl init` (and `daemon start` on a new data directory): prepares the data directory
// (0700) with the TLS certificate, creates the store (the JSON store there, or the PostgreSQL
// schema with --database-url) and the first admin user. With the JSON store the JWT signing
// secret is a file beside it; with PostgreSQL it lives in the database, shared by every daemon.
// Files holding secrets are 0600.
import { randomBytes } from 'node:crypto';
import { access, chmod, mkdir, writeFile } from 'node:fs/promises';
import { isValidEmail } from '../shared/email.js';
import { layout, type DataLayout } from '../shared/paths.js';
import { describeDatabaseUrl, openStore, storeInitialised } from '../store/factory.js';
import { StoreConflictError } from '../store/store.js';
import { generatePassword, newUserRecord } from './auth/password.js';
import { generateCertificate } from './tls.js';

export interface InitOptions {
  email?: string;
  name?: string;
  password?: string;
  /** `--database-url`: the store is PostgreSQL; the data directory holds TLS, pid and log only. */
  databaseUrl?: string;
}

export interface InitResult {
  paths: DataLayout;
  /** Where the store is: the data directory, or the database (without credentials). */
  store: string;
  email: string;
  /** Set when the password was generated: shown once, never stored in plain text. */
  generatedPassword: string | null;
}

export class AlreadyInitialisedError extends Error {
  constructor(readonly where: string) {
    super(`${where} is already initialised`);
  }
}

/** A new JWT signing secret. */
export function newJwtSecret(): string {
  return randomBytes(48).toString('base64url');
}

/** Whether the configured store already holds a panel. */
export async function isInitialised(root: string, databaseUrl?: string): Promise<boolean> {
  return storeInitialised({ dataDir: root, databaseUrl });
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

export class InvalidEmailError extends Error {
  constructor(readonly email: string) {
    super(`${JSON.stringify(email)} is not an email address (e.g. admin@localhost or jane@example.com)`);
  }
}

/** Creates the data directory (0700) and its TLS certificate when missing; keeps what is there. */
export async function prepareDataDir(root: string): Promise<DataLayout> {
  const paths = layout(root);
  await mkdir(paths.root, { recursive: true, mode: 0o700 });
  await chmod(paths.root, 0o700);
  await mkdir(paths.tlsDir, { recursive: true, mode: 0o700 });
  if (!(await exists(paths.cert)) || !(await exists(paths.key))) {
    const { cert, key } = await generateCertificate();
    await writeFile(paths.key, key, { mode: 0o600 });
    await writeFile(paths.cert, cert, { mode: 0o644 });
  }
  return paths;
}

export async function initDataDir(root: string, options: InitOptions = {}): Promise<InitResult> {
  const { databaseUrl } = options;
  const where = databaseUrl ? `the database ${describeDatabaseUrl(databaseUrl)}` : root;
  // The same rule as the API's (shared/email.ts): the first admin can log in and reset its password.
  const email = (options.email ?? 'admin@localhost').trim().toLowerCase();
  if (!isValidEmail(email)) throw new InvalidEmailError(email);
  if (await isInitialised(root, databaseUrl)) throw new AlreadyInitialisedError(where);
  const paths = await prepareDataDir(root);
  if (!databaseUrl) await writeFile(paths.jwtSecret, newJwtSecret(), { mode: 0o600, flag: 'w' });

  const generatedPassword = options.password ? null : generatePassword();
  const password = options.password ?? generatedPassword!;
  const store = await openStore({ dataDir: root, databaseUrl, create: true });
  try {
    // Made now, so every daemon that opens the database later signs with the same one.
    await store.sharedSecret('jwt', newJwtSecret);
    const now = new Date().toISOString();
    await store.users.insert(await newUserRecord({ email, name: options.name ?? 'Administrator', role: 'admin', password }, now)).catch((error: unknown) => {
      // Another daemon initialised the same database a moment ago.
      if (error instanceof StoreConflictError && error.constraint === 'users.email') throw new AlreadyInitialisedError(where);
      throw error;
    });
  } finally {
    await store.close();
  }
  return { paths, store: databaseUrl ? describeDatabaseUrl(databaseUrl) : paths.root, email, generatedPassword };
}
