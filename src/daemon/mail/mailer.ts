// Outgoing mail (password reset): SMTP when `PANELCTL_SMTP_URL` is set, otherwise each message
// is written as an .eml file (0600) under the data directory's mail/ for the administrator to read.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import writeFileAtomic from 'write-file-atomic';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface MailConfig {
  /** e.g. `smtp://user:pass@mail.example.com:587` or `smtps://…:465`; null writes .eml files. */
  smtpUrl: string | null;
  from: string;
  mailDir: string;
}

export interface Mailer {
  readonly transport: 'smtp' | 'file';
  /** Resolves once the message was handed to the SMTP server or written to disk. */
  send(mail: Mail): Promise<void>;
}

export const DEFAULT_MAIL_FROM = 'panelctl <panelctl@localhost>';

/**
 * Reads the mail configuration from the daemon's environment.
 * @example
 * const mailer = createMailer(mailConfigFromEnv(process.env, paths.mailDir));
 */
export function mailConfigFromEnv(env: NodeJS.ProcessEnv, mailDir: string): MailConfig {
  return {
    smtpUrl: env.PANELCTL_SMTP_URL?.trim() || null,
    from: env.PANELCTL_MAIL_FROM?.trim() || DEFAULT_MAIL_FROM,
    mailDir,
  };
}

/**
 * A transporter made at the first message (most daemons never send one, and nodemailer is
 * large to load): `options` as nodemailer's createTransport takes them.
 */
function lazyTransport(options: string | object): () => Promise<Transporter> {
  let transporter: Promise<Transporter> | null = null;
  return () => (transporter ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(options)));
}

export function createMailer(config: MailConfig): Mailer {
  if (config.smtpUrl) {
    const transporter = lazyTransport(config.smtpUrl);
    return {
      transport: 'smtp',
      async send(mail) {
        await (await transporter()).sendMail({ from: config.from, ...mail });
      },
    };
  }
  // The stream transport renders the full RFC 5322 message without sending it anywhere.
  const renderer = lazyTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    transport: 'file',
    async send(mail) {
      const info = await (await renderer()).sendMail({ from: config.from, ...mail });
      await mkdir(config.mailDir, { recursive: true, mode: 0o700 });
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = join(config.mailDir, `${stamp}-${randomBytes(4).toString('hex')}.eml`);
      await writeFileAtomic(file, info.message as Buffer, { mode: 0o600 });
    },
  };
}
