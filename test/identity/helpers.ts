// Helpers of the identity tests: an independent RFC 6238 implementation (node:crypto, not
// otplib), users and settings through the API, and a look into the data directory.
import { createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import type { TestDaemon } from '../helpers/daemon.js';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error(`not base32: ${char}`);
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** HOTP (RFC 4226) of a raw key at a counter, `digits` long. */
export function hotp(key: Buffer, counter: number, digits = 6): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) | mac[offset + 3];
  return String(binary % 10 ** digits).padStart(digits, '0');
}

export const STEP_SECONDS = 30;

export function currentStep(now = Date.now()): number {
  return Math.floor(now / 1000 / STEP_SECONDS);
}

/** The TOTP code of a base32 secret for a time step. */
export function totpAt(secret: string, step: number): string {
  return hotp(base32Decode(secret), step);
}

export async function putSettings(daemon: Pick<TestDaemon, 'request'>, token: string, patch: Record<string, unknown>): Promise<void> {
  const result = await daemon.request('PUT', '/admin/settings', { token, body: patch });
  expect(result.status, result.text).toBe(200);
}

/** Settings that keep limits out of the way of tests about something else. */
export const RELAXED = {
  rate_limit_mode: 'requests',
  rate_limit_login_per_minute: 10_000,
  rate_limit_reset_per_minute: 10_000,
  rate_limit_user_per_minute: 100_000,
} as const;

export interface CreatedUser {
  id: number;
  email: string;
  password: string;
}

export async function createUser(daemon: Pick<TestDaemon, 'request'>, adminToken: string, email: string, role = 'customer', password = 'customer-password-1'): Promise<CreatedUser> {
  const result = await daemon.request('POST', '/admin/users', { token: adminToken, body: { email, name: email.split('@')[0], password, role } });
  expect(result.status, result.text).toBe(201);
  return { id: result.body.data.id, email, password };
}

/** Every regular file under a directory, recursively. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** The files under `dir` whose bytes contain `needle`. */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const file of await filesUnder(dir)) {
    if ((await readFile(file)).includes(needle)) hits.push(file);
  }
  return hits;
}

/** Waits until `probe` returns a value (not undefined), or fails after `timeoutMs` (generous: a busy machine is slow, not wrong). */
export function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (value === undefined) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

/**
 * Puts an in-process app's clock a second into the next TOTP step, so a short sequence of codes
 * sees no step change (the clock flows on from there); returns that step.
 */
export function freshStep(clock: { now(): number; set(epochMs: number): void }): number {
  const step = currentStep(clock.now()) + 1;
  clock.set(step * STEP_SECONDS * 1000 + 1000);
  return step;
}

export { quickPasswordHash } from '../helpers/passwords.js';
