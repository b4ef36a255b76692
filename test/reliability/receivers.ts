// HTTPS receivers for reliability tests, each with its own behaviour, on loopback, with a
// self-signed certificate whose CA file the daemon gets through NODE_EXTRA_CA_CERTS.
import { createServer, type Server } from 'node:https';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { generateCertificate } from '../../src/daemon/tls.js';

export interface Received {
  at: number;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

export interface ReceiverCa {
  cert: string;
  key: string;
  caFile: string;
}

export async function makeCa(): Promise<ReceiverCa> {
  const pems = generateCertificate(2);
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-receiver-'));
  const caFile = join(dir, 'ca.pem');
  await writeFile(caFile, pems.cert);
  return { cert: pems.cert, key: pems.key, caFile };
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export async function startReceiver(ca: ReceiverCa, handler: Handler): Promise<Receiver> {
  const received: Received[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer({ cert: ca.cert, key: ca.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ at: Date.now(), headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as import('node:net').AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export const ok: Handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
