// Password reset tokens and revoked sessions (JWT ids): short-lived rows, pruned by time.
import type { ResetTokensRepository, RevokedTokensRepository } from '../../store.js';
import type { RepositoryFactory } from './context.js';
import { insertStatement, toResetToken } from '../rows.js';

export const resetTokensRepository: RepositoryFactory<ResetTokensRepository> = (db) => {
  const resetTokens: ResetTokensRepository = {
    async byHash(tokenHash) {
      const { rows } = await db.query('SELECT * FROM reset_tokens WHERE token_hash = $1', [tokenHash]);
      return rows[0] && toResetToken(rows[0]);
    },
    async insert(record) {
      const { text, values } = insertStatement('reset_tokens', record);
      const { rows } = await db.query(text, values);
      return toResetToken(rows[0]);
    },
    async markUsed(id, at) {
      const { rowCount } = await db.query('UPDATE reset_tokens SET used_at = $2 WHERE id = $1 AND used_at IS NULL', [id, at]);
      return rowCount === 1;
    },
    async removeForUser(userId, now) {
      await db.query(
        'DELETE FROM reset_tokens WHERE user_id = $1 OR expires_at::timestamptz < to_timestamp($2::double precision / 1000)',
        [userId, now],
      );
    },
  };
  return resetTokens;
};

export const revokedTokensRepository: RepositoryFactory<RevokedTokensRepository> = (db) => {
  const revokedTokens: RevokedTokensRepository = {
    async revoke(jti, expiresAt) {
      await db.query(
        `INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2)
         ON CONFLICT (jti) DO UPDATE SET expires_at = greatest(revoked_tokens.expires_at, excluded.expires_at)`,
        [jti, expiresAt],
      );
      // Open streams of the token end on this, on every daemon (see daemon/auth/caller-watch.ts).
      await db.fence('revoked_tokens', null);
    },
    async isRevoked(jti) {
      const { rowCount } = await db.query('SELECT 1 FROM revoked_tokens WHERE jti = $1', [jti]);
      return rowCount === 1;
    },
    async prune(now) {
      await db.query('DELETE FROM revoked_tokens WHERE expires_at <= $1', [now]);
    },
  };
  return revokedTokens;
};
