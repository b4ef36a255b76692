// `panelctl listen [--events E] [--forward-to URL] [--print-secret]`: while it runs, the events
// the caller may see are delivered to this CLI over the daemon's event stream exactly as an
// endpoint gets them (same body, headers and signature, with the session's secret, printed at
// start). With --forward-to the CLI makes the request itself (so http://localhost is fine: it
// is the user's machine, and the daemon gets no SSRF exception), prints one line per attempt,
// and reports the outcome, which the daemon logs like any attempt (watch and the stream show it).
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import type { Dispatcher } from 'undici';
import { EXIT } from '../../shared/errors.js';
import type { ApiClient } from '../api-client.js';
import type { Context } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import type { Ui } from '../output.js';
import { attemptRow } from './webhooks/view.js';

export interface ListenOptions {
  events?: string;
  forwardTo?: string;
  printSecret?: boolean;
}

/** What the daemon pushes for each attempt. */
export interface Push {
  delivery_id: string;
  event: string;
  headers: Record<string, string>;
  body: string;
}

interface Session {
  session_id: string;
  endpoint_id: number;
  secret: string;
  events: string;
}

/** What this CLI reports back: how the forwarded request went. */
export interface ForwardOutcome {
  status_code: number;
  duration_ms: number;
  response?: string;
  error?: string;
}

const FORWARD_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 4096;

export function listenCommand(ctx: Context): Command {
  return new Command('listen')
    .description('receive your events here while it runs, as an endpoint would (signed), and forward them to a local URL')
    .option('--events <events>', '"*" or a comma-separated list of event names', '*')
    .option('--forward-to <url>', 'POST each event to this URL (plain http://localhost allowed) and print one line per attempt')
    .option('--print-secret', "print the session's signing secret alone on stdout first, for scripts")
    .action(async (options: ListenOptions) => listenRun(ctx, options));
}

function checkForwardUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--forward-to: not a URL: "${raw}" (expected e.g. http://localhost:8000/webhooks)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--forward-to: must be http: or https:, not ${url.protocol}`);
  return url;
}

/** Why a request got no answer, in the words the daemon's log uses. */
export function forwardError(error: unknown, timedOut: boolean): string {
  if (timedOut) return `timeout after ${FORWARD_TIMEOUT_MS / 1000} s`;
  let current = error as (Error & { code?: string; cause?: unknown }) | undefined;
  for (let i = 0; current && i < 4; i++, current = current.cause as typeof current) {
    switch (current.code) {
      case 'ECONNREFUSED':
        return 'connection refused';
      case 'ECONNRESET':
      case 'UND_ERR_SOCKET':
        return 'connection reset';
      case 'ENOTFOUND':
        return 'DNS: host not found';
      case 'DEPTH_ZERO_SELF_SIGNED_CERT':
        return 'TLS: self-signed certificate';
    }
  }
  return `connection error: ${(error as Error)?.message ?? String(error)}`;
}

/** POSTs one pushed attempt to `url`: no redirects, 10 s in all, at most 4 KB of the answer read. */
export async function forward(url: URL, push: Push, dispatcher?: Dispatcher): Promise<ForwardOutcome> {
  const { request } = await import('undici');
  const started = performance.now();
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, FORWARD_TIMEOUT_MS);
  try {
    const response = await request(url, { method: 'POST', headers: push.headers, body: push.body, signal: controller.signal, dispatcher });
    let text = '';
    for await (const chunk of response.body) {
      text += (chunk as Buffer).toString('utf8');
      if (Buffer.byteLength(text) >= MAX_RESPONSE_BYTES) {
        response.body.destroy();
        break;
      }
    }
    return { status_code: response.statusCode, duration_ms: Math.round(performance.now() - started), response: text.slice(0, MAX_RESPONSE_BYTES) };
  } catch (error) {
    return { status_code: 0, duration_ms: Math.round(performance.now() - started), error: forwardError(error, timedOut) };
  } finally {
    clearTimeout(timer);
  }
}

/** One line per forwarded attempt, in the row format of `webhooks test` and `deliveries --follow`. */
export function attemptLine(ui: Ui, push: Push, outcome: ForwardOutcome, endpointId: number, at = new Date()): string {
  const ok = outcome.status_code >= 200 && outcome.status_code < 300;
  const status = outcome.status_code ? `HTTP ${outcome.status_code}` : (outcome.error ?? 'no answer');
  return attemptRow(ui, { at: at.toISOString(), ok, status, event: push.event, where: [`webhook ${endpointId}`], durationMs: outcome.duration_ms, deliveryId: push.delivery_id });
}

export async function listenRun(ctx: Context, options: ListenOptions): Promise<void> {
  const target = options.forwardTo ? checkForwardUrl(options.forwardTo) : null;
  const client: ApiClient = ctx.client();
  const ui = ctx.json ? null : await ctx.ui();
  const { SseParser } = await import('../stream/sse.js');
  const { errorOf } = await import('../stream/deliveries.js');
  const controller = new AbortController();
  let interrupted = false;
  const stop = () => {
    interrupted = true;
    controller.abort();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let session: Session | null = null;
  const inFlight = new Set<Promise<void>>();

  const handle = async (push: Push) => {
    const current = session!;
    const outcome: ForwardOutcome = target ? await forward(target, push) : { status_code: 200, duration_ms: 0 };
    if (ctx.json) {
      ctx.io.stdout.write(`${JSON.stringify(target ? { type: 'attempt', delivery_id: push.delivery_id, event: push.event, ...outcome } : { type: 'event', delivery_id: push.delivery_id, event: push.event, headers: push.headers, body: JSON.parse(push.body) })}\n`);
    } else if (target) {
      ctx.out(attemptLine(ui!, push, outcome, current.endpoint_id));
    } else {
      ctx.out([ui!.time(new Date().toISOString()), ui!.c.bold(push.event), ui!.c.dim(push.delivery_id), push.body].join(ui!.tty ? '  ' : '\t'));
    }
    try {
      await client.call('POST', `/events/listen/${current.session_id}/results`, { delivery_id: push.delivery_id, ...outcome });
    } catch (error) {
      if (!controller.signal.aborted) ctx.err(`could not report the attempt of ${push.delivery_id}: ${(error as Error).message}`);
    }
  };

  let revoked: string | null = null;
  try {
    const response = await client.stream(`/events/listen?events=${encodeURIComponent(options.events ?? '*')}`, controller.signal);
    if (response.statusCode !== 200) throw await errorOf(response);
    const parser = new SseParser((event) => {
      if (event.event === 'session') {
        session = JSON.parse(event.data) as Session;
        if (options.printSecret && !ctx.json) ctx.io.stdout.write(`${session.secret}\n`);
        if (ctx.json) ctx.io.stdout.write(`${JSON.stringify({ type: 'session', ...session })}\n`);
        const where = target ? `forwarding to ${target.href}` : 'printing them here';
        ctx.err(`Ready: events ${session.events} are delivered to this session (webhook ${session.endpoint_id}), ${where}. Ctrl-C to stop.`);
        ctx.err(`Signing secret of this session (X-Webhook-Signature): ${session.secret}`);
      } else if (event.event === 'webhook' && session) {
        const job = handle(JSON.parse(event.data) as Push).finally(() => inFlight.delete(job));
        inFlight.add(job);
      }
    }, (comment) => {
      if (comment.startsWith('ended: ')) revoked = comment.slice('ended: '.length);
    });
    response.body.setEncoding('utf8');
    for await (const chunk of response.body) parser.push(chunk as string);
  } catch (error) {
    if (!interrupted) throw error instanceof CliError ? error : new CliError(`the listen stream failed: ${(error as Error).message}`);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await Promise.allSettled([...inFlight]);
  }
  // The daemon ends a session whose credential was revoked, and says why.
  if (!interrupted && revoked) throw new CliError(`the daemon ended the listen session: ${revoked}`, EXIT.AUTH);
  if (!interrupted) throw new CliError('the daemon ended the listen session (stopped or restarted)');
}
