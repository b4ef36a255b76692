// The files the daemon reads from the data directory at start (the JWT secret, the TLS pair),
// checked so that a damaged one stops the start with its name and what to do, rather than a
// bare crypto error, or a daemon that starts and then answers every login with a 500.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { access, readFile, writeFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { generateCertificate } from './tls.js';

/** A start-up failure whose message names the file and the remedy (shown as one line). */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** Shortest accepted JWT secret (HS256 wants at least 256 bits); init writes 64 characters. */
export const MIN_SECRET_LENGTH = 32;

function reason(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/**
 * Reads the JWT signing secret: missing, unreadable, empty or shorter than 32 characters is a
 * StartupError naming the file.
 * @example
 * const secret = await readJwtSecret(paths.jwtSecret);
 */
export async function readJwtSecret(file: string): Promise<Uint8Array> {
  const fix = `write a new one with \`openssl rand -base64 48 > ${file} && chmod 600 ${file}\` (signed-in sessions end; API keys keep working)`;
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    throw new StartupError(`the JWT secret ${file} cannot be read (${reason(error)}); ${fix}`);
  }
  if (text.length === 0) throw new StartupError(`the JWT secret ${file} is empty; ${fix}`);
  if (text.length < MIN_SECRET_LENGTH) {
    throw new StartupError(`the JWT secret ${file} is too short (${text.length} characters, at least ${MIN_SECRET_LENGTH}); ${fix}`);
  }
  return new TextEncoder().encode(text);
}

export interface TlsFiles {
  cert: string;
  key: string;
  /** The data directory's own pair (not --tls-cert/--tls-key): it may be made anew. */
  own: boolean;
}

async function readOrMissing(file: string): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Reads and checks the TLS certificate and key. The data directory's own pair, when both files
 * are gone, is made anew (self-signed, as `init` does) and `notice` says so; any other missing,
 * unreadable, truncated or mismatched file is a StartupError naming it.
 */
export async function readTlsPair(files: TlsFiles, notice: (message: string) => void = () => undefined): Promise<{ cert: Buffer; key: Buffer }> {
  const fix = files.own
    ? `restore it from a backup, or remove both ${files.cert} and ${files.key} to have a new self-signed pair made at the next start (clients that trust the old certificate must then be given the new one)`
    : 'check the files given with --tls-cert and --tls-key';
  let cert: Buffer | null;
  let key: Buffer | null;
  try {
    cert = await readOrMissing(files.cert);
  } catch (error) {
    throw new StartupError(`the TLS certificate ${files.cert} cannot be read (${reason(error)}); ${fix}`);
  }
  try {
    key = await readOrMissing(files.key);
  } catch (error) {
    throw new StartupError(`the TLS key ${files.key} cannot be read (${reason(error)}); ${fix}`);
  }
  if (!cert && !key && files.own) {
    const pair = await generateCertificate();
    await writeFile(files.key, pair.key, { mode: 0o600 });
    await writeFile(files.cert, pair.cert, { mode: 0o644 });
    notice(`${files.cert} and ${files.key} were missing: made a new self-signed pair (clients that trusted the old certificate need this one)`);
    return { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key) };
  }
  if (!cert) throw new StartupError(`the TLS certificate ${files.cert} is missing; ${fix}`);
  if (!key) throw new StartupError(`the TLS key ${files.key} is missing; ${fix}`);
  try {
    createPrivateKey(key);
  } catch {
    throw new StartupError(`the TLS key ${files.key} is not a usable private key (truncated, or not PEM); ${fix}`);
  }
  try {
    new X509Certificate(cert);
  } catch {
    throw new StartupError(`the TLS certificate ${files.cert} is not a usable certificate (truncated, or not PEM); ${fix}`);
  }
  try {
    // `ca: []`: the pair is all this context checks. Without it Node parses its ~150 root
    // certificates into a store for the context, the dearest part of a start, for nothing.
    createSecureContext({ cert, key, ca: [] });
  } catch (error) {
    throw new StartupError(`the TLS certificate ${files.cert} and key ${files.key} do not go together (${(error as Error).message}); ${fix}`);
  }
  return { cert, key };
}

/**
 * The warning for a daemon started with a database URL on a data directory that holds a JSON
 * store: that store is left alone, so users, keys and webhooks in it seem to have vanished
 * unless someone says where they are and how to bring them over. Null when there is none.
 * @example
 * const warning = await unusedJsonStoreWarning('/var/lib/panelctl/store.json', 'db.internal/panel');
 */
export async function unusedJsonStoreWarning(storeFile: string, database: string): Promise<string | null> {
  try {
    await access(storeFile);
  } catch {
    return null;
  }
  return (
    `${storeFile} holds a JSON store that this daemon does not use: it serves from the PostgreSQL database ${database}. ` +
    'To bring that data over, stop the daemon and run panelctl store migrate --to URL (into an empty database)'
  );
}
