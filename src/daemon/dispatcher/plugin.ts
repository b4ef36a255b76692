// Runs the dispatcher with the daemon: started once fastify is ready (so pending deliveries
// from before a restart go out), woken by the store's change feed, stopped as soon as closing
// begins (attempts in flight finish and are recorded before the store closes; the rest stays
// in the outbox).
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { EndpointNotices, reportAttempt } from './attempt-report.js';
import { Dispatcher } from './dispatcher.js';
import { ListenHub } from './listen-hub.js';
import { WebhookSender } from './sender.js';

/** Whether webhooks may target private networks now: the daemon flag or the admin setting. */
export function privateTargetsAllowed(app: FastifyInstance): boolean {
  return app.daemon.allowPrivateWebhooks === true || app.settings.current().webhook_allow_private_networks;
}

/** PANELCTL_CLAIM_LEASE_MS, at least 2 s; unset or unusable: the default (60 s). */
export function leaseFromEnv(value: string | undefined): number | undefined {
  const ms = Number(value);
  return Number.isSafeInteger(ms) && ms >= 2_000 ? ms : undefined;
}

export default fp(
  async function dispatcherPlugin(app: FastifyInstance) {
    const listenHub = new ListenHub();
    app.decorate('listenHub', listenHub);
    app.decorate('endpointNotices', new EndpointNotices());
    const dispatcher = new Dispatcher({
      store: app.store,
      clock: app.clock,
      sender: new WebhookSender({ ca: app.daemon.webhookCa, local: listenHub }),
      allowPrivate: () => privateTargetsAllowed(app),
      log: app.log,
      // How long a claimed delivery stays this daemon's: after a crash, another daemon of the
      // database makes it once the lease ends. It must exceed an attempt (10 s) with room.
      leaseMs: leaseFromEnv(process.env.PANELCTL_CLAIM_LEASE_MS),
      metrics: app.metrics,
      events: app.events,
    });
    app.decorate('dispatcher', dispatcher);
    // A log line per attempt this daemon made, and the auto-disable, once it is recorded.
    dispatcher.onAttempt((entry) => void reportAttempt(app, entry));
    app.addHook('onReady', async () => {
      // The daemon before this one on the data directory died holding leases: they are its no
      // longer, so what it was sending goes out now rather than when its leases would end.
      const { predecessor } = app.daemon;
      if (predecessor) {
        await app.store.outbox.abandon(predecessor).catch((error: Error) => app.log.warn({ err: error }, `could not give up the leases of the daemon that ended without stopping: its deliveries wait until the leases end (${error.message})`));
      }
      dispatcher.start();
    });
    app.addHook('preClose', async () => dispatcher.stop());
  },
  { name: 'dispatcher', dependencies: ['errors', 'metrics'] },
);

declare module 'fastify' {
  interface FastifyInstance {
    dispatcher: Dispatcher;
  }
}
