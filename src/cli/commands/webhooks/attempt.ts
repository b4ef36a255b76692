// `webhooks test` and `webhooks redeliver` answer after the first attempt. When it failed, a
// retry follows 2 s later: these helpers wait for it (spinner on a TTY) so the command can
// report how the delivery ended, and fail (exit 1) when it failed.
import type { ApiClient } from '../../api-client.js';
import type { DeliveryLogEntry } from '../../api-types.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';
import { deliveryLine } from './view.js';

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

/** Shows the first attempt, waits for the retry when it failed, and throws when the delivery failed. */
export async function reportAttempt(ctx: Context, client: ApiClient, first: DeliveryLogEntry, wait: boolean, what: string): Promise<void> {
  const ui = ctx.json ? null : await ctx.ui();
  if (ui) ctx.out(deliveryLine(ui, first));
  let last = first;
  if (!first.success && wait && first.attempt < 2) {
    const spinner = ui?.spinner(`attempt ${first.attempt} failed; waiting for the retry…`);
    try {
      const retry = await waitForRetry(client, first);
      if (retry) {
        last = retry;
        if (ui) {
          spinner?.stop();
          ctx.out(deliveryLine(ui, retry));
        }
      } else {
        ui?.note('the retry did not show up in the delivery log in time');
      }
    } finally {
      spinner?.stop();
    }
  }
  if (ctx.json) ctx.printJson(last);
  if (!last.success) {
    const status = last.status_code === 0 ? 'no answer' : `HTTP ${last.status_code}`;
    const pending = !wait && last.attempt < 2 ? ' (a retry follows in 2 s; see panelctl webhooks deliveries)' : '';
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
