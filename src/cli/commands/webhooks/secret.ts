// Where a webhook signing secret comes from: --secret (visible in `ps`), --secret-stdin, or
// --generate-secret (printed once). At most one of them.
import { randomBytes } from 'node:crypto';
import type { Context } from '../../context.js';
import type { Ui } from '../../output.js';
import { UsageError } from '../../errors.js';
import { readSecretFromStdin } from '../../prompt.js';

export interface SecretOptions {
  secret?: string;
  secretStdin?: boolean;
  generateSecret?: boolean;
}

export interface ResolvedSecret {
  value: string;
  generated: boolean;
}

export type SignatureScheme = 'seed' | 'standard-webhooks';
export const SIGNATURE_SCHEMES: SignatureScheme[] = ['seed', 'standard-webhooks'];

/**
 * 32 random bytes, as strong as the HMAC key can use: hex for `seed`, `whsec_` and base64 for
 * `standard-webhooks` (that specification's secret format).
 */
export function generateSecret(scheme: SignatureScheme = 'seed'): string {
  const bytes = randomBytes(32);
  return scheme === 'standard-webhooks' ? `whsec_${bytes.toString('base64')}` : bytes.toString('hex');
}

export async function resolveSecret(
  ctx: Context,
  options: SecretOptions,
  required: boolean,
  scheme: SignatureScheme = 'seed',
): Promise<ResolvedSecret | undefined> {
  const given = [options.secret !== undefined, Boolean(options.secretStdin), Boolean(options.generateSecret)].filter(Boolean).length;
  if (given > 1) throw new UsageError('use only one of --secret, --secret-stdin and --generate-secret');
  if (options.secret !== undefined) {
    if (!options.secret) throw new UsageError('--secret must not be empty');
    return { value: options.secret, generated: false };
  }
  if (options.secretStdin) return { value: await readSecretFromStdin(ctx, 'secret'), generated: false };
  if (options.generateSecret) return { value: generateSecret(scheme), generated: true };
  if (required) throw new UsageError('a signing secret is required: --secret-stdin, --generate-secret or --secret S');
  return undefined;
}

/** The warning that goes with a generated secret (printed once, in the endpoint's record). */
export function warnSecretShownOnce(ui: Ui): void {
  ui.warn('This signing secret is shown only once and cannot be retrieved again: configure your receiver with it now.');
}
