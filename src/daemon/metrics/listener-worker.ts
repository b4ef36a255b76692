// The metrics listener's thread (started by server.ts): plain HTTP, GET/HEAD /metrics only;
// each scrape asks the daemon's thread, which holds the registry, for the exposition.
import { createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromListener, ListenerOptions, ToListener } from './server.js';

type Answer = Exclude<ToListener, { type: 'close' }>;

const port = parentPort!;
const { host, port: wanted } = workerData as ListenerOptions;
const tell = (message: FromListener) => port.postMessage(message);
const waiting = new Map<number, (answer: Answer) => void>();
let nextId = 0;

const server = createServer((request, response) => {
  const path = (request.url ?? '/').split('?')[0];
  if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
    response.writeHead(path === '/metrics' ? 405 : 404, { 'content-type': 'text/plain; charset=utf-8', ...(path === '/metrics' ? { allow: 'GET, HEAD' } : {}) });
    response.end(path === '/metrics' ? 'method not allowed\n' : 'not found: the metrics are at /metrics\n');
    return;
  }
  const id = ++nextId;
  waiting.set(id, (answer) => {
    if (answer.type === 'exposition') {
      response.writeHead(200, { 'content-type': answer.contentType });
      response.end(request.method === 'HEAD' ? undefined : answer.body);
    } else {
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      response.end(`metrics could not be collected: ${answer.message}\n`);
    }
  });
  tell({ type: 'scrape', id });
});
server.keepAliveTimeout = 65_000;

port.on('message', (message: ToListener) => {
  if (message.type === 'close') {
    // Closing the port as well lets the thread end once the server has.
    server.close(() => port.close());
    server.closeAllConnections();
    return;
  }
  const answer = waiting.get(message.id);
  waiting.delete(message.id);
  answer?.(message);
});

server.once('error', (error: NodeJS.ErrnoException) => {
  tell({ type: 'failed', message: error.message, code: error.code, syscall: error.syscall });
});
server.listen({ host, port: wanted }, () => {
  const address = server.address();
  tell({ type: 'listening', port: typeof address === 'object' && address ? address.port : wanted });
});
