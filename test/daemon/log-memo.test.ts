// The delivery-log answer memo: an endpoint's answer is rebuilt when the store's revision of its
// log moves and only then, other endpoints keep theirs, and the bytes kept stay within the budget.
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { LogMemo } from '../../src/daemon/routes/webhooks/log-memo.js';

function fakeReply() {
  const sent: { body?: string; link?: string } = {};
  const reply = {
    serialize: (value: unknown) => JSON.stringify(value),
    header(name: string, value: string) {
      if (name === 'link') sent.link = value;
      return reply;
    },
    type: () => reply,
    send(body: Buffer) {
      sent.body = body.toString();
      return reply;
    },
  };
  return { reply: reply as unknown as FastifyReply, sent };
}

describe('LogMemo', () => {
  it('rebuilds an endpoint\'s answer when its revision moves, and only then', async () => {
    const memo = new LogMemo();
    const builds: number[] = [];
    const send = async (endpointId: number, revision: string, value: string, view = '') => {
      const { reply, sent } = fakeReply();
      await memo.send(reply, endpointId, view, revision, async () => {
        builds.push(endpointId);
        return { envelope: { data: value }, next: endpointId === 2 ? '/x?after=5' : null };
      });
      return sent;
    };
    expect((await send(1, 'r1', 'a')).body).toBe('{"data":"a"}');
    expect((await send(1, 'r1', 'changed')).body).toBe('{"data":"a"}');
    expect(await send(2, 'r1', 'b')).toEqual({ body: '{"data":"b"}', link: '</x?after=5>; rel="next"' });
    expect(await send(2, 'r1', 'other')).toEqual({ body: '{"data":"b"}', link: '</x?after=5>; rel="next"' });
    expect((await send(1, 'r2', 'a2')).body).toBe('{"data":"a2"}');
    expect((await send(1, 'r2', 'a3')).body).toBe('{"data":"a2"}');
    expect((await send(2, 'r1', 'b2')).body).toBe('{"data":"b"}');
    // Another query of the same log is another answer.
    expect((await send(1, 'r2', 'filtered', 'success=false')).body).toBe('{"data":"filtered"}');
    expect(builds).toEqual([1, 2, 1, 1]);
  });

  it('keeps at most its budget of bytes, dropping the least recently used', async () => {
    const memo = new LogMemo(1000);
    let builds = 0;
    const send = (endpointId: number) =>
      memo.send(fakeReply().reply, endpointId, '', 'r', async () => {
        builds++;
        return { envelope: { data: String(endpointId).repeat(300) }, next: null };
      });
    for (let endpointId = 1; endpointId <= 5; endpointId++) await send(endpointId);
    expect(builds).toBe(5);
    // Three answers of about 312 bytes fit; the two oldest were dropped.
    await send(5);
    await send(3);
    expect(builds).toBe(5);
    await send(1);
    expect(builds).toBe(6);
  });
});
