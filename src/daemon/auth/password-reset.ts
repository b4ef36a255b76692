// Password reset: `request` mails a single-use token valid for one hour (only its hash is kept),
// `complete` exchanges a valid token for a new password. Requests are handled in the background
// so that the answer, and its timing, is the same whether or not the account exists.
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Mailer } from '../mail/mailer.js';
import { hashPassword } from './password.js';
import { RESET_TOKEN_TTL_MS, generateResetToken, hashResetToken } from './reset-tokens.js';

export interface PasswordResetOptions {
  store: Store;
  mailer: Mailer;
  clock: () => number;
  log: FastifyBaseLogger;
  /** The daemon's URL, quoted in the mail when known. */
  baseUrl?: string;
}

export class PasswordResets {
  readonly #pending = new Set<Promise<void>>();

  constructor(private readonly options: PasswordResetOptions) {}

  /** Starts a reset for `email` if such an account exists; never reveals whether it does. */
  request(email: string): void {
    const work = this.#issue(email.trim().toLowerCase()).catch((error: unknown) => {
      this.options.log.error({ err: error }, 'password reset mail could not be sent');
    });
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  /** Resolves once every reset started so far has been mailed (or has failed). */
  async idle(): Promise<void> {
    await Promise.all([...this.#pending]);
  }

  /** Sets the password of the token's user; throws INVALID_TOKEN for an unknown, used or expired token. */
  async complete(token: string, password: string): Promise<void> {
    const { store, clock } = this.options;
    const hash = hashResetToken(token);
    const record = await store.resetTokens.byHash(hash);
    const now = clock();
    const refused = () => new ApiError('INVALID_TOKEN', 'the reset token is unknown, already used or expired: request a new one');
    if (!record || record.used_at !== null || Date.parse(record.expires_at) <= now) throw refused();
    // The store spends a token once, even when two requests (or two daemons) present it at once.
    const at = new Date(now).toISOString();
    if (!(await store.resetTokens.markUsed(record.id, at))) throw refused();
    const user = await store.users.get(record.user_id);
    if (!user) throw refused();
    await store.users.update(user.id, {
      password_hash: await hashPassword(password),
      password_changed_at: at,
      // Every JWT issued under the old password is refused from this update on.
      token_generation: (user.token_generation ?? 0) + 1,
      updated_at: at,
    });
    await store.resetTokens.removeForUser(user.id, now);
  }

  async #issue(email: string): Promise<void> {
    const { store, clock, mailer, baseUrl } = this.options;
    const user = await store.users.byEmail(email);
    if (!user) return;
    const now = clock();
    // One live token per user: a new request replaces the older ones; expired ones of anyone go too.
    await store.resetTokens.removeForUser(user.id, now);
    const { token, hash } = generateResetToken();
    const expires = new Date(now + RESET_TOKEN_TTL_MS);
    await store.resetTokens.insert({
      user_id: user.id,
      token_hash: hash,
      expires_at: expires.toISOString(),
      used_at: null,
      created_at: new Date(now).toISOString(),
    });
    const endpoint = `${baseUrl ?? ''}/api/v1/auth/reset-password`;
    // Plain ASCII in lines under 76 characters, so the mail stays 7bit and the token is never
    // folded by a transfer encoding.
    await mailer.send({
      to: user.email,
      subject: 'panelctl: reset your password',
      text: [
        `Hello ${user.name},`,
        '',
        'Someone (hopefully you) asked to reset the password of your',
        'panelctl account. Your reset token, usable once, valid until',
        `${expires.toISOString()}:`,
        '',
        `    ${token}`,
        '',
        'Send it with your new password:',
        `POST ${endpoint}`,
        '{"token": "<the token>", "password": "<your new password>"}',
        '',
        'If you did not ask for this, ignore this mail: your password',
        'stays as it is.',
        '',
      ].join('\n'),
    });
  }
}
