// Reading secrets: from stdin for scripts, hidden at a TTY prompt for people.
import { EXIT } from '../shared/errors.js';
import type { Context } from './context.js';
import { CliError } from './errors.js';

/** Reads a line without echo from a TTY. */
export async function promptHidden(ctx: Context, question: string): Promise<string> {
  const stdin = ctx.io.stdin as NodeJS.ReadStream;
  if (!stdin.isTTY) throw new CliError(`${question.trim()} needs a terminal; use --password-stdin`, EXIT.USAGE);
  // Echo goes off before the question appears: whatever is typed once it is visible is hidden.
  stdin.setRawMode(true);
  ctx.io.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    stdin.resume();
    stdin.setEncoding('utf8');
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') {
          done();
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          done();
          reject(new CliError('cancelled', EXIT.ERROR));
          return;
        }
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else value += char;
      }
    };
    const done = () => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      ctx.io.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

/** Reads a line with echo from a TTY. */
export async function promptLine(ctx: Context, question: string): Promise<string> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr as NodeJS.WritableStream });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

/** The first line of stdin, without its line ending. */
export async function readSecretFromStdin(ctx: Context, what = 'password'): Promise<string> {
  const text = await ctx.readStdin();
  const value = text.split(/\r?\n/)[0] ?? '';
  if (!value) throw new CliError(`no ${what} on standard input`, EXIT.USAGE);
  return value;
}

/** For init and users create: stdin with --password-stdin, a hidden prompt on a TTY, else null (generate one). */
export async function readNewPassword(ctx: Context, fromStdin: boolean, question = 'Admin password (empty to generate one): '): Promise<string | null> {
  if (fromStdin) {
    const password = await readSecretFromStdin(ctx);
    if (password.length < 8) throw new CliError('the password must have at least 8 characters', EXIT.USAGE);
    return password;
  }
  if ((ctx.io.stdin as NodeJS.ReadStream).isTTY && (ctx.io.stderr as NodeJS.WriteStream).isTTY) {
    const password = await promptHidden(ctx, question);
    if (!password) return null;
    if (password.length < 8) throw new CliError('the password must have at least 8 characters', EXIT.USAGE);
    const again = await promptHidden(ctx, 'Repeat it: ');
    if (again !== password) throw new CliError('the passwords do not match', EXIT.USAGE);
    return password;
  }
  return null;
}
