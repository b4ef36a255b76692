// GET /api/v1/health/ready: readiness, no authentication. Ready when the store serves (a read
// through PostgreSQL's pool; the JSON store not stuck after a failed journal write) and the
// dispatcher's claim loop turned recently; else 503 `not ready`, with each check's finding in
// `data.checks`. Liveness stays GET /health: a daemon whose database is down is alive (a
// restart would not help) but not ready (a load balancer should send its traffic elsewhere).
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { EnvelopeOf, errorResponses, ok } from '../../../shared/envelope.js';
import { ApiError } from '../../../shared/errors.js';

/** The claim loop turns at least once a second while healthy; silence this long means it is stuck. */
export const DISPATCHER_STALL_MS = 15_000;
/** A store check that has not answered by then fails (a database host that vanished does not refuse, it hangs). */
export const STORE_CHECK_TIMEOUT_MS = 2_000;

const Check = Type.String({ description: '`ok`, or why this part is not ready' });
const Checks = Type.Object({ store: Check, dispatcher: Check });
const Ready = Type.Object({ status: Type.Literal('ready'), checks: Checks });

async function storeCheck(app: FastifyInstance): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`the store did not answer within ${STORE_CHECK_TIMEOUT_MS / 1000} s`), STORE_CHECK_TIMEOUT_MS);
  });
  try {
    const found = await Promise.race([app.store.ready().catch((error: Error) => error.message), late]);
    return found ?? 'ok';
  } finally {
    clearTimeout(timer);
  }
}

function dispatcherCheck(app: FastifyInstance): string {
  const { running, sinceTurnMs } = app.dispatcher.loopState();
  if (!running) return 'the dispatcher is not running';
  if (sinceTurnMs === null) return 'the dispatcher has not started its loop yet';
  if (sinceTurnMs > DISPATCHER_STALL_MS) return `the dispatcher's loop has not turned for ${Math.round(sinceTurnMs / 1000)} s`;
  return 'ok';
}

export default async function readyRoute(app: FastifyInstance) {
  app.get(
    '/health/ready',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['health'],
        summary: 'Readiness: the store answers and the webhook dispatcher runs (503 `not ready` naming the failing check otherwise)',
        description:
          'No authentication. 200 when the store answers (on PostgreSQL a read through the connection pool; the JSON store not stuck ' +
          'after a failed journal write) and the webhook dispatcher\'s loop turned in the last 15 s. Otherwise 503 with `error` ' +
          '`not ready` and `data` `{ status: "not ready", checks: { store, dispatcher } }`, each check `ok` or why not. ' +
          '`GET /health` stays liveness: a daemon whose database is down is alive but not ready.',
        response: { 200: EnvelopeOf(Ready), ...errorResponses(503) },
      },
    },
    async () => {
      const checks = { store: await storeCheck(app), dispatcher: dispatcherCheck(app) };
      const failing = Object.entries(checks).filter(([, finding]) => finding !== 'ok');
      if (failing.length > 0) {
        throw new ApiError('NOT_READY', `not ready: ${failing.map(([name, finding]) => `${name}: ${finding}`).join('; ')}`, {
          data: { status: 'not ready', checks },
          headers: { 'retry-after': '5' },
        });
      }
      return ok({ status: 'ready' as const, checks });
    },
  );
}
