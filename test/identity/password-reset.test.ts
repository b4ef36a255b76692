// Password reset through the app in-process (app.inject): the same answer for any email, a
// single-use token mailed as an .eml file (or over SMTP when configured), only its hash stored.
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { RELAXED, createUser, currentStep, eventually, filesContaining, putSettings, totpAt } from './helpers.js';

const FORGOT_MESSAGE = /if an account with that email exists/;

/** The token of a reset mail: the indented line of its body. */
function tokenOf(mail: string): string {
  const match = /^ {4}([A-Za-z0-9_-]{43})$/m.exec(mail);
  if (!match) throw new Error(`no token in mail:\n${mail}`);
  return match[1];
}

async function mailFiles(api: { dataDir: string }): Promise<string[]> {
  try {
    return (await readdir(join(api.dataDir, 'mail'))).filter((f) => f.endsWith('.eml')).sort();
  } catch {
    return [];
  }
}

/** Waits for the n-th .eml file and returns its text. */
async function nthMail(api: { dataDir: string }, n: number): Promise<string> {
  const name = await eventually(async () => (await mailFiles(api))[n - 1], `mail file #${n}`);
  return mailText(api, name);
}

function mailText(api: { dataDir: string }, name: string): Promise<string> {
  return readFile(join(api.dataDir, 'mail', name), 'utf8');
}

describe('password reset with mail written to files', () => {
  let api: TestApp;
  let admin: string;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED });
    admin = await api.login();
  });
  afterAll(async () => {
    await api?.close();
  });

  const forgot = (email: string) => api.request('POST', '/auth/forgot-password', { body: { email } });
  const reset = (token: string, password: string) => api.request('POST', '/auth/reset-password', { body: { token, password } });

  it('answers an existing and an unknown email identically, mailing only the existing one', async () => {
    const user = await createUser(api, admin, 'forgetful@example.com');
    const unknown = await forgot('nobody@example.com');
    const known = await forgot(user.email);
    expect(unknown.status).toBe(200);
    expect(known.status).toBe(200);
    expect(known.body).toEqual({ data: null, error: null, message: expect.stringMatching(FORGOT_MESSAGE) });
    expect(unknown.body).toEqual(known.body);

    // A mail for the unknown address would be written before that of a later request: a third
    // request (for another user) is the marker that shows none came.
    const marker = await createUser(api, admin, 'marker@example.com');
    expect((await forgot(marker.email)).status).toBe(200);
    await nthMail(api, 2);
    const names = await mailFiles(api);
    const recipients = await Promise.all(names.map(async (name) => /^To: (.*)$/m.exec(await mailText(api, name))?.[1]));
    expect([...recipients].sort()).toEqual(['forgetful@example.com', 'marker@example.com']); // none for the unknown address
    const name = names[recipients.indexOf('forgetful@example.com')];
    const mail = await mailText(api, name);
    expect(mail).toMatch(/^To: forgetful@example\.com$/m);
    expect(mail).toMatch(/^Subject: .*reset/im);
    const file = join(api.dataDir, 'mail', name);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    // Only the token's SHA-256 is stored (in the store's files: snapshot or journal), never the token outside the mail.
    const token = tokenOf(mail);
    const mailDir = join(api.dataDir, 'mail');
    expect((await filesContaining(api.dataDir, token)).filter((f) => !f.startsWith(mailDir))).toEqual([]);
    // Control: the store's files hold its hash (the JSON store; PostgreSQL keeps it in the database).
    if (!api.databaseUrl) expect(await filesContaining(api.dataDir, createHash('sha256').update(token).digest('hex'))).not.toEqual([]);

    // Issued right before the change, most likely in the same second: refused all the same
    // (the token generation moves with the password, to the millisecond).
    const before = await api.login(user.email, user.password);
    expect((await api.request('GET', '/auth/me', { token: before })).status).toBe(200);
    const done = await reset(token, 'brand-new-password');
    expect(done.status, done.text).toBe(200);
    expect(done.body).toEqual({ data: null, error: null, message: expect.any(String) });

    expect((await api.request('POST', '/auth/login', { body: { email: user.email, password: user.password } })).status).toBe(401);
    const fresh = await api.request('POST', '/auth/login', { body: { email: user.email, password: 'brand-new-password' } });
    expect(fresh.status).toBe(200);
    // Sessions opened with the old password end; one opened after the change, in the same second too, works.
    const old = await api.request('GET', '/auth/me', { token: before });
    expect(old.status).toBe(401);
    expect(old.body.message).toMatch(/password was changed/);
    expect((await api.request('GET', '/auth/me', { token: fresh.body.data.token })).status).toBe(200);

    // Single use.
    const again = await reset(token, 'another-password');
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ data: null, error: 'invalid token', message: expect.any(String) });
    expect((await api.request('POST', '/auth/login', { body: { email: user.email, password: 'brand-new-password' } })).status).toBe(200);
  });

  it('refuses unknown tokens (400 invalid token) and validates the body', async () => {
    const unknown = await reset('A'.repeat(43), 'long-enough-password');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid token');
    const short = await reset('A'.repeat(43), 'short');
    expect(short.status).toBe(422);
    expect(short.body.message).toMatch(/password/);
    expect((await api.request('POST', '/auth/reset-password', { body: { password: 'long-enough-password' } })).status).toBe(400);
    const badEmail = await api.request('POST', '/auth/forgot-password', { body: { email: 'not an email' } });
    expect(badEmail.status).toBe(422);
    expect(badEmail.body.message).toMatch(/email/);
  });

  it('replaces an older token when a new one is requested', async () => {
    const user = await createUser(api, admin, 'twice@example.com');
    const count = (await mailFiles(api)).length;
    await forgot(user.email);
    const first = tokenOf(await nthMail(api, count + 1));
    await forgot(user.email);
    const second = tokenOf(await nthMail(api, count + 2));
    expect(second).not.toBe(first);
    expect((await reset(first, 'replaced-password')).body.error).toBe('invalid token');
    expect((await reset(second, 'replaced-password')).status).toBe(200);
    expect((await api.request('POST', '/auth/login', { body: { email: user.email, password: 'replaced-password' } })).status).toBe(200);
  });

  it('leaves 2FA on after a reset: the password alone does not log in', async () => {
    const user = await createUser(api, admin, 'both-factors@example.com');
    const token = await api.login(user.email, user.password);
    const { secret } = (await api.request('POST', '/auth/2fa/setup', { token })).body.data;
    expect((await api.request('POST', '/auth/2fa/enable', { token, body: { totp_code: totpAt(secret, currentStep()) } })).status).toBe(200);
    const count = (await mailFiles(api)).length;
    await forgot(user.email);
    expect((await reset(tokenOf(await nthMail(api, count + 1)), 'after-reset-password')).status).toBe(200);
    const login = await api.request('POST', '/auth/login', { body: { email: user.email, password: 'after-reset-password' } });
    expect(login.body.error).toBe('2fa_required');
  });

  it('never writes a reset token in plain text into the data directory outside the mail', async () => {
    const user = await createUser(api, admin, 'grep-reset@example.com');
    const count = (await mailFiles(api)).length;
    await forgot(user.email);
    const token = tokenOf(await nthMail(api, count + 1));
    const hits = await filesContaining(api.dataDir, token);
    expect(hits.map((f) => f.slice(api.dataDir.length))).toEqual([expect.stringMatching(/^\/mail\/.*\.eml$/)]);
  });
});

/** A minimal SMTP receiver (RFC 5321 happy path, no TLS), enough for nodemailer. */
function smtpReceiver(): Promise<{ server: Server; port: number; messages: Array<{ from: string; to: string[]; data: string }> }> {
  const messages: Array<{ from: string; to: string[]; data: string }> = [];
  const server = createServer((socket: Socket) => {
    let buffer = '';
    let inData = false;
    let current = { from: '', to: [] as string[], data: '' };
    socket.write('220 test-smtp ready\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          messages.push(current);
          current = { from: '', to: [], data: '' };
          socket.write('250 queued\r\n');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 test-smtp\r\n');
        else if (verb === 'MAIL') (current.from = line), socket.write('250 ok\r\n');
        else if (verb === 'RCPT') current.to.push(line), socket.write('250 ok\r\n');
        else if (verb === 'DATA') (inData = true), socket.write('354 go ahead\r\n');
        else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, messages })));
}

describe('password reset over SMTP', () => {
  it('sends the mail to the configured SMTP server (PANELCTL_SMTP_URL, PANELCTL_MAIL_FROM) and writes no file', async () => {
    const smtp = await smtpReceiver();
    // The app reads the mail settings from the environment when it is built, as the daemon does.
    vi.stubEnv('PANELCTL_SMTP_URL', `smtp://127.0.0.1:${smtp.port}`);
    vi.stubEnv('PANELCTL_MAIL_FROM', 'Panel <panel@example.net>');
    const api = await buildTestApp().finally(() => vi.unstubAllEnvs());
    try {
      const admin = await api.login();
      await putSettings(api, admin, RELAXED);
      const user = await createUser(api, admin, 'smtp-user@example.com');
      expect((await api.request('POST', '/auth/forgot-password', { body: { email: user.email } })).status).toBe(200);
      const message = await eventually(async () => smtp.messages[0], 'an SMTP message');
      expect(message.from).toContain('<panel@example.net>');
      expect(message.to).toEqual([expect.stringContaining('<smtp-user@example.com>')]);
      expect(message.data).toMatch(/^From: Panel <panel@example\.net>$/m);
      const token = tokenOf(message.data.replace(/\r\n/g, '\n'));
      expect(await mailFiles(api)).toEqual([]);
      const done = await api.request('POST', '/auth/reset-password', { body: { token, password: 'smtp-new-password' } });
      expect(done.status, done.text).toBe(200);
      expect((await api.request('POST', '/auth/login', { body: { email: user.email, password: 'smtp-new-password' } })).status).toBe(200);
    } finally {
      await api.close();
      smtp.server.close();
    }
  });
});
