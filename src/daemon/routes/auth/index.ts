// Authentication routes: login and logout, TOTP 2FA, password reset.
import type { FastifyInstance } from 'fastify';
import loginRoutes, { logoutRoutes } from './login.js';
import passwordResetRoutes from './password-reset.js';
import twoFactorRoutes from './two-factor.js';

export default async function authRoutes(app: FastifyInstance) {
  await app.register(loginRoutes);
  await app.register(logoutRoutes);
  await app.register(twoFactorRoutes);
  await app.register(passwordResetRoutes);
}
