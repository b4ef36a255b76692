// How user records are shown by the API: never the password hash or TOTP secret.
import type { UserRecord } from '../../../store/types.js';
import type { User, UserDetail } from '../../../shared/api/users.js';

export function publicUser(user: UserRecord): User {
  return { id: user.id, email: user.email, name: user.name, role: user.role };
}

export function userDetail(user: UserRecord): UserDetail {
  return { ...publicUser(user), two_factor_enabled: user.two_factor_enabled, created_at: user.created_at };
}
