// The delivery-log answer memo: an endpoint's answer is rebuilt after its log changes and only
// then, other endpoints keep theirs, an answer built across a change is not kept, and the bytes
// kept stay within the budget.
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
  it('rebuilds an endpoint\'s answer after its log changes, and only then', async () => {
    const memo = new LogMemo();
    const builds: number[] = [];
    const answer = (endpointId: number, value: string) => async () => {
      builds.push(endpointId);
      return { envelope: { data: value }, next: endpointId === 2 ? '/x?after=5' : null };
    };
    const send = async (endpointId: number, value: string) => {
      const { reply, sent } = fakeReply();
      await memo.send(reply, endpointId, '', answer(endpointId, value));
      return sent;
    };
    expect((await send(1, 'a')).body).toBe('{"data":"a"}');
    expect((await send(1, 'changed')).body).toBe('{"data":"a"}');
    expect(await send(2, 'b')).toEqual({ body: '{"data":"b"}', link: '</x?after=5>; rel="next"' });
    expect(await send(2, 'other')).toEqual({ body: '{"data":"b"}', link: '</x?after=5>; rel="next"' });
    memo.invalidate(1);
    expect((await send(1, 'a2')).body).toBe('{"data":"a2"}');
    expect((await send(2, 'b2')).body).toBe('{"data":"b"}');
    expect(builds).toEqual([1, 2, 1]);
  });

  it('serves but does not keep an answer built across a change of its log', async () => {
    const memo = new LogMemo();
    const { reply, sent } = fakeReply();
    await memo.send(reply, 1, '', async () => {
      memo.invalidate(1);
      return { envelope: { data: 'during' }, next: null };
    });
    expect(sent.body).toBe('{"data":"during"}');
    const again = fakeReply();
    await memo.send(again.reply, 1, '', async () => ({ envelope: { data: 'after' }, next: null }));
    expect(again.sent.body).toBe('{"data":"after"}');
  });

  it('keeps at most its budget of bytes, dropping the least recently used', async () => {
    const memo = new LogMemo(1000);
    let builds = 0;
    const big = (tag: string) => async () => {
      builds++;
      return { envelope: { data: tag.repeat(300) }, next: null };
    };
    for (let endpointId = 1; endpointId <= 5; endpointId++) await memo.send(fakeReply().reply, endpointId, '', big(String(endpointId)));
    expect(builds).toBe(5);
    // Three answers of about 312 bytes fit; the two oldest were dropped.
    await memo.send(fakeReply().reply, 5, '', big('5'));
    await memo.send(fakeReply().reply, 3, '', big('3'));
    expect(builds).toBe(5);
    await memo.send(fakeReply().reply, 1, '', big('1'));
    expect(builds).toBe(6);
  });
});
