// Users: accounts, their credentials and two-factor state. Removing a user takes their keys,
// endpoints (with deliveries and logs), reset tokens and subscriptions (with sites) by cascade.
import type { UsersRepository } from '../../store.js';
import { changing, type RepositoryFactory } from './context.js';
import { insertStatement, toUser, updateStatement } from '../rows.js';

export const usersRepository: RepositoryFactory<UsersRepository> = (db) => {
  const users: UsersRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM users WHERE id = $1', [id]);
      return rows[0] && toUser(rows[0]);
    },
    async byEmail(email) {
      const { rows } = await db.query('SELECT * FROM users WHERE lower(email) = lower($1)', [email]);
      return rows[0] && toUser(rows[0]);
    },
    async list() {
      const { rows } = await db.query('SELECT * FROM users ORDER BY id');
      return rows.map(toUser);
    },
    async count() {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
      return rows[0].n;
    },
    async insert(record) {
      const { text, values } = insertStatement('users', record);
      const { rows } = await db.atomic((d) => changing(d, 'users', text, values));
      return toUser(rows[0]);
    },
    async update(id, patch) {
      const statement = updateStatement('users', id, patch);
      if (!statement) return users.get(id);
      const { rows } = await db.atomic((d) => changing(d, 'users', statement.text, statement.values));
      return rows[0] && toUser(rows[0]);
    },
    async remove(id) {
      // API keys, endpoints (with deliveries and logs), reset tokens, subscriptions (with sites)
      // go by ON DELETE CASCADE in the same statement.
      const { rows } = await changing(db, 'users', 'DELETE FROM users WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toUser(rows[0]);
    },
  };
  return users;
};
