// `panelctl init`: creates the data directory (0700) with the store, the JWT signing secret,
// the TLS certificate and the first admin user. Files holding secrets are 0600.
import { randomBytes } from 'node:crypto';
import { access, chmod, mkdir, writeFile } from 'node:fs/promises';
import { isValidEmail } from '../shared/email.js';
import { layout, type DataLayout } from '../shared/paths.js';
import { JsonStore } from '../store/json/json-store.js';
import { generatePassword, newUserRecord } from './auth/password.js';
import { generateCertificate } from './tls.js';

export interface InitOptions {
  email?: string;
  name?: string;
  password?: string;
}

export interface InitResult {
  paths: DataLayout;
  email: string;
  /** Set when the password was generated: shown once, never stored in plain text. */
  generatedPassword: string | null;
}

export class AlreadyInitialisedError extends Error {
  constructor(readonly dir: string) {
    super(`${dir} is already initialised`);
  }
}

export async function isInitialised(root: string): Promise<boolean> {
  try {
    await access(layout(root).store);
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

export async function initDataDir(root: string, options: InitOptions = {}): Promise<InitResult> {
  const paths = layout(root);
  // The same rule as the API's (shared/email.ts): the first admin can log in and reset its password.
  const email = (options.email ?? 'admin@localhost').trim().toLowerCase();
  if (!isValidEmail(email)) throw new InvalidEmailError(email);
  if (await isInitialised(root)) throw new AlreadyInitialisedError(root);
  await mkdir(paths.root, { recursive: true, mode: 0o700 });
  await chmod(paths.root, 0o700);
  await mkdir(paths.tlsDir, { recursive: true, mode: 0o700 });

  await writeFile(paths.jwtSecret, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'w' });
  const { cert, key } = generateCertificate();
  await writeFile(paths.key, key, { mode: 0o600 });
  await writeFile(paths.cert, cert, { mode: 0o644 });

  const generatedPassword = options.password ? null : generatePassword();
  const password = options.password ?? generatedPassword!;
  const store = await JsonStore.open(paths, { create: true });
  try {
    const now = new Date().toISOString();
    await store.users.insert(await newUserRecord({ email, name: options.name ?? 'Administrator', role: 'admin', password }, now));
  } finally {
    await store.close();
  }
  return { paths, email, generatedPassword };
}
