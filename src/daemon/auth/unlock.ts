// Ends login lockouts: an address's (variant B, `lock:<ip>`) and an account's second factor
// (`totp:<user id>`). Used by POST /admin/unlock and by `panelctl admin unlock` on a store no
// daemon holds, so both clear the same keys.
import { isIP } from 'node:net';
import type { Repositories } from '../../store/store.js';
import { LOCKOUT_KEY_PREFIX, TOTP_LOCKOUT_KEY_PREFIX, totpLockoutKey } from '../plugins/lockout.js';

export interface UnlockRequest {
  /** One address; with neither `ip` nor `email`, every address and every account. */
  ip?: string;
  /** One account's second factor. */
  email?: string;
}

export interface UnlockOutcome {
  /** Addresses whose login count or lock was removed. */
  addresses: number;
  /** Accounts whose second-factor count or lock was removed. */
  accounts: number;
}

export class UnlockError extends Error {
  constructor(
    readonly reason: 'ip' | 'email',
    message: string,
  ) {
    super(message);
    this.name = 'UnlockError';
  }
}

/**
 * The forms an address is counted under: a daemon listening on a dual-stack socket sees IPv4
 * clients as `::ffff:a.b.c.d`, so an IPv4 address is cleared in both forms.
 */
export function addressForms(ip: string): string[] {
  const text = ip.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text);
  const v4 = mapped ? mapped[1] : isIP(text) === 4 ? text : null;
  if (v4) return [v4, `::ffff:${v4}`];
  if (isIP(text) === 6) return [text.toLowerCase()];
  throw new UnlockError('ip', `--ip / ip must be an IPv4 or IPv6 address, got "${ip}"`);
}

/**
 * @example
 * await unlock(store, { ip: '203.0.113.7' }); // { addresses: 1, accounts: 0 }
 * await unlock(store, {});                    // every lockout
 */
export async function unlock(store: Repositories, request: UnlockRequest): Promise<UnlockOutcome> {
  const outcome: UnlockOutcome = { addresses: 0, accounts: 0 };
  const everything = request.ip === undefined && request.email === undefined;
  // Checked before anything is removed, so a mistyped email removes nothing.
  const forms = request.ip !== undefined ? addressForms(request.ip) : [];
  let userId: number | undefined;
  if (request.email !== undefined) {
    const user = await store.users.byEmail(request.email.trim());
    if (!user) throw new UnlockError('email', `no user with email ${request.email.trim()}`);
    userId = user.id;
  }
  if (everything) {
    outcome.addresses = await store.limiter.removePrefix(LOCKOUT_KEY_PREFIX);
    outcome.accounts = await store.limiter.removePrefix(TOTP_LOCKOUT_KEY_PREFIX);
    return outcome;
  }
  for (const form of forms) if (await store.limiter.remove(`${LOCKOUT_KEY_PREFIX}${form}`)) outcome.addresses++;
  if (userId !== undefined && (await store.limiter.remove(totpLockoutKey(userId)))) outcome.accounts++;
  return outcome;
}
