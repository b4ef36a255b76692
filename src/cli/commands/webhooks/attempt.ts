// `webhooks test` and `webhooks redeliver` answer after the first attempt. When it failed, a
// retry follows (2 s later by default; the endpoint's retry schedule may say otherwise): these
// helpers wait for it (spinner on a TTY) so the command can report how the delivery ended, and
// fail (exit 1) when it failed.
import type { ApiClient } from '../../api-client.js';
import type { DeliveryLogEntry } from '../../api-types.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';
import { deliveryLine } from './view.js';
import { retryDelaySecondsOf } from '../../../shared/webhook-protocol.js';

/** Retry delay 2 s + receiver timeout 10 s, with room for a busy daemon. */
export const RETRY_WAIT_MS = 30_000;

export async function waitForRetry(
  client: ApiClient,
  first: DeliveryLogEntry,
  timeoutMs = RETRY_WAIT_MS,
): Promise<DeliveryLogEntry | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 400));
    const { data } = await client.call<DeliveryLogEntry[]>('GET', `/webhooks/${first.endpoint_id}/deliveries`);
    const retry = data.find((d) => d.delivery_id === first.delivery_id && d.attempt > first.attempt);
    if (retry) return retry;
  }
  return undefined;
}

/** Whether a retry follows a failed attempt: as the entry says, or (older daemons say nothing) after a first attempt. */
function retryFollows(entry: DeliveryLogEntry): boolean {
  if (entry.success) return false;
  return entry.next_attempt_at === undefined ? entry.attempt < 2 : entry.next_attempt_at !== null;
}


/** Retries due later than this after their attempt are not waited for (an endpoint's schedule of minutes or hours). */
const WAIT_FOR_RETRY_SECONDS = 10;

/**
 * Shows the first attempt, waits for each retry that follows soon when it failed, and throws
 * when the delivery failed (or its next retry is not waited for).
 */
export async function reportAttempt(ctx: Context, client: ApiClient, first: DeliveryLogEntry, wait: boolean, what: string): Promise<void> {
  const ui = ctx.json ? null : await ctx.ui();
  if (ui) ctx.out(deliveryLine(ui, first));
  let last = first;
  while (wait && retryFollows(last) && retryDelaySecondsOf(last) <= WAIT_FOR_RETRY_SECONDS) {
    const spinner = ui?.spinner(`attempt ${last.attempt} failed; waiting for the retry…`);
    try {
      const retry = await waitForRetry(client, last);
      if (!retry) {
        ui?.note('the retry did not show up in the delivery log in time');
        break;
      }
      last = retry;
      if (ui) {
        spinner?.stop();
        ctx.out(deliveryLine(ui, retry));
      }
    } finally {
      spinner?.stop();
    }
  }
  if (ctx.json) ctx.printJson(last);
  if (!last.success) {
    const status = last.status_code === 0 ? 'no answer' : `HTTP ${last.status_code}`;
    const waited = wait && retryDelaySecondsOf(last) <= WAIT_FOR_RETRY_SECONDS;
    const pending = retryFollows(last) && !waited ? ` (a retry follows in ${retryDelaySecondsOf(last)} s; see panelctl webhooks deliveries)` : '';
    const advice = adviceFor(last.reason);
    throw new CliError(`${what} failed: ${status} on attempt ${last.attempt}${pending}${advice ? `. ${advice}` : ''}`);
  }
  ui?.success(`${what} delivered (HTTP ${last.status_code}, attempt ${last.attempt})`);
}

/**
 * What to do about the two failures a receiver on the user's own machine meets first: the daemon
 * refusing a private address, and the daemon not trusting the receiver's certificate.
 */
export function adviceFor(reason: string | null | undefined): string | undefined {
  if (reason?.startsWith('blocked:')) {
    return `${reason}: for a receiver on this machine or network, start the daemon with --allow-private-webhooks (or set webhook_allow_private_networks)`;
  }
  if (reason?.startsWith('TLS:')) {
    return `${reason}: the daemon does not trust the receiver's certificate; start it with NODE_EXTRA_CA_CERTS=receiver-cert.pem (or use a certificate from a public CA)`;
  }
  return undefined;
}
