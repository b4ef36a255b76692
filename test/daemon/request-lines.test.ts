// Fastify's own lines about each request (RequestLines): the two per-request info lines appear at
// `info` and are skipped above it, while a request that errored is logged at every level.
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { RequestLines, childLoggerFactory } from '../../src/daemon/request-logger.js';

async function serve(level: string) {
  const lines: Array<{ msg: string; level: number }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const controller = new RequestLines(level);
  const app = Fastify({ logger: { level, stream }, childLoggerFactory, logController: controller });
  app.get('/ok', async () => ({ ok: true }));
  // What fastify does when the response fails after its headers: the controller's error path.
  app.get('/errored', async (request, reply) => {
    controller.requestCompleted(new Error('socket went away'), request, reply);
    return { ok: true };
  });
  await app.ready();
  return { app, lines };
}

describe('RequestLines', () => {
  it('writes "incoming request" and "request completed" at info', async () => {
    const { app, lines } = await serve('info');
    expect((await app.inject({ method: 'GET', url: '/ok' })).statusCode).toBe(200);
    await app.close();
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
  });

  it('skips them above info, but still logs a request that errored', async () => {
    const { app, lines } = await serve('warn');
    expect((await app.inject({ method: 'GET', url: '/ok' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/errored' })).statusCode).toBe(200);
    await app.close();
    const messages = lines.map((l) => l.msg);
    expect(messages).not.toContain('incoming request');
    expect(messages).not.toContain('request completed');
    expect(lines.filter((l) => l.msg === 'request errored')).toHaveLength(1);
    expect(lines.find((l) => l.msg === 'request errored')!.level).toBe(50);
  });
});
