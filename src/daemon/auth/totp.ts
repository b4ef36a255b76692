// TOTP second factor (RFC 6238: HMAC-SHA1, 6 digits, 30 s steps, one step of drift either way)
// with otplib, plus the replay rule: a code is accepted only for a step after the last accepted one.
import { authenticator } from 'otplib';

export const TOTP_ISSUER = 'panelctl';
export const TOTP_STEP_SECONDS = 30;

// HMAC-SHA1 is otplib's default algorithm (and the only one common authenticator apps support).
const totp = authenticator.clone({ step: TOTP_STEP_SECONDS, digits: 6, window: 1 });

/** A new random secret: 20 bytes (the RFC's size for SHA-1), base32 as authenticator apps expect. */
export function newTotpSecret(): string {
  return totp.generateSecret(20);
}

/** The otpauth:// URL authenticator apps read from a QR code. */
export function otpauthUrl(account: string, secret: string): string {
  return totp.keyuri(account, TOTP_ISSUER, secret);
}

/** The time step `code` belongs to, within one step of `now` (epoch ms), or null when it matches none. */
export function totpStepOf(code: string, secret: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  let delta: number | null;
  try {
    delta = totp.clone({ epoch: now }).checkDelta(code, secret);
  } catch {
    return null; // a malformed stored secret is a refusal, not a 500
  }
  if (delta === null) return null;
  return Math.floor(now / 1000 / TOTP_STEP_SECONDS) + delta;
}

/**
 * The step to record when `code` is valid and newer than `lastStep`, else null. Refusing the
 * same or an earlier step makes each code single-use, and an older code useless once a newer
 * one was accepted.
 *
 * @example
 * const step = acceptTotp(body.totp_code, user.totp_secret, user.totp_last_step, app.clock());
 * if (step === null) throw new ApiError('INVALID_TOTP', '...');
 */
export function acceptTotp(code: string, secret: string, lastStep: number | null, now: number): number | null {
  const step = totpStepOf(code, secret, now);
  if (step === null) return null;
  if (lastStep !== null && step <= lastStep) return null;
  return step;
}
