// The one-line summary of an attempt (`webhooks test`, `redeliver`, `deliveries --follow`): a
// failed attempt's reason is the receiver's body, cleaned and shortened at a word with an ellipsis.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { DeliveryLogEntry } from '../../src/cli/api-types.js';
import type { Io } from '../../src/cli/context.js';
import { deliveryLine } from '../../src/cli/commands/webhooks/view.js';
import { buildProgram } from '../../src/cli/program.js';

function fakeIo(): Io {
  const sink = () => Object.assign(new PassThrough(), { isTTY: false });
  return { stdout: sink(), stderr: sink(), stdin: sink(), env: {} };
}

const entry = (response: string): DeliveryLogEntry =>
  ({
    id: 9,
    endpoint_id: 3,
    delivery_id: '3f1c2a9e-8b4d-4e2f-9a61-0c7d5e4b8a12',
    event: 'webhook.test',
    payload: {},
    status_code: 502,
    response,
    success: false,
    duration_ms: 12,
    attempt: 1,
    created_at: '2025-01-15T10:30:00Z',
  }) as DeliveryLogEntry;

describe('deliveryLine', () => {
  it('ends a long reason at a word, with an ellipsis', async () => {
    const { ctx } = await buildProgram({ args: [], io: fakeIo() });
    const ui = await ctx.ui();
    const body = 'upstream connect error or disconnect/reset before headers. reset reason: connection termination';
    const reason = /HTTP 502 \((.*)\)\t/.exec(deliveryLine(ui, entry(body)))![1];
    expect(reason).toBe('upstream connect error or disconnect/reset before headers…');
    expect(/HTTP 502 \((.*)\)\t/.exec(deliveryLine(ui, entry('Bad Gateway')))![1]).toBe('Bad Gateway');
    // An untrusted body cannot move the cursor or break the line.
    expect(deliveryLine(ui, entry('\u001b[2Jgone\r\naway'))).toContain('(gone away)');
  });
});
