// Server limits: how long a client may take to send its headers and its whole request, how long
// an idle connection is kept, and how many connections one client address may hold open. Without
// them a client that opens connections and sends nothing, or a body one byte at a time, holds a
// socket (and TLS state) forever. See docs/decisions/hardening.md.
import type { Server } from 'node:http';
import { Server as TlsServer } from 'node:tls';
import type { Socket } from 'node:net';
import type { FastifyServerOptions } from 'fastify';

export interface ServerLimits {
  /** From connection (or the start of a request) to the end of its headers; also the TLS handshake. */
  headersTimeoutMs: number;
  /** From the start of a request to the end of its body. A response being written is not cut. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection between two requests. */
  keepAliveTimeoutMs: number;
  /** A socket on which nothing is read or written (a stream's keepalive counts as writing). */
  socketTimeoutMs: number;
  /** Open connections per client IP address; more are closed at once. */
  maxConnectionsPerIp: number;
  /** How often node checks the header and request deadlines. */
  checkIntervalMs: number;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 10_000,
  socketTimeoutMs: 60_000,
  maxConnectionsPerIp: 256,
  checkIntervalMs: 1_000,
};

/** Environment variables that override a limit (for tuning, and for tests that need small ones). */
export const LIMIT_ENV: Readonly<Record<keyof ServerLimits, string>> = {
  headersTimeoutMs: 'PANELCTL_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'PANELCTL_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'PANELCTL_KEEPALIVE_TIMEOUT_MS',
  socketTimeoutMs: 'PANELCTL_SOCKET_TIMEOUT_MS',
  maxConnectionsPerIp: 'PANELCTL_MAX_CONNECTIONS_PER_IP',
  checkIntervalMs: 'PANELCTL_TIMEOUT_CHECK_MS',
};

/**
 * The limits, with any set in the environment; a value that is not a positive integer is an
 * error naming the variable.
 * @example
 * limitsFromEnv({ PANELCTL_MAX_CONNECTIONS_PER_IP: '4' }).maxConnectionsPerIp; // 4
 */
export function limitsFromEnv(env: NodeJS.ProcessEnv = process.env): ServerLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [field, name] of Object.entries(LIMIT_ENV) as Array<[keyof ServerLimits, string]>) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (!/^[1-9][0-9]{0,9}$/.test(raw)) throw new Error(`${name} must be a positive integer, got "${raw}"`);
    limits[field] = Number(raw);
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(`${LIMIT_ENV.headersTimeoutMs} (${limits.headersTimeoutMs}) must not exceed ${LIMIT_ENV.requestTimeoutMs} (${limits.requestTimeoutMs})`);
  }
  return limits;
}

/** Options for node's http/https server constructor (fastify passes `https` or `http` through). */
export function nodeServerOptions(limits: ServerLimits): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number; handshakeTimeout: number } {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
    // TLS only: a client that connects and never completes the handshake.
    handshakeTimeout: limits.headersTimeoutMs,
  };
}

/** The fastify options that carry the limits (the node server options go in `https`/`http`). */
// Requests that miss these deadlines are answered (408, as the envelope) by the app's
// clientErrorHandler (plugins/protocol-errors.ts), as every other error before routing. Socket
// inactivity is not among them: closeInactiveSockets watches it.
export function fastifyLimitOptions(limits: ServerLimits): Pick<FastifyServerOptions, 'keepAliveTimeout' | 'requestTimeout'> {
  return {
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
  };
}

/** What a socket has read and written so far, and what it still has queued to write. */
interface Activity {
  read: number;
  written: number;
  queued: number;
}

function activityOf(socket: Socket): Activity {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle;
  return { read: socket.bytesRead, written: socket.bytesWritten, queued: handle?.writeQueueSize ?? 0 };
}

/**
 * Closes a connection on which nothing was read or written for `timeoutMs` (socket inactivity),
 * seen by a sweep every `everyMs` (a quarter of the timeout, at most 5 s): such a connection is
 * closed between `timeoutMs` and `timeoutMs + everyMs` after its last activity. A write still
 * draining to a slow reader is activity. Node's own per-socket timeout (fastify's
 * `connectionTimeout`) would do the same by re-arming a timer on every read and write of every
 * request; the sweep costs a request nothing. Watches the sockets the HTTP server is given: the
 * TLS sockets of an HTTPS server, the TCP ones of an HTTP server.
 * @example
 * const watch = closeInactiveSockets(app.server, 60_000);
 * app.addHook('onClose', async () => watch.stop());
 */
export function closeInactiveSockets(server: Server, timeoutMs: number, everyMs = Math.max(1, Math.min(5_000, Math.ceil(timeoutMs / 4)))): { stop(): void } {
  const sockets = new Map<Socket, { activity: Activity; since: number }>();
  const event = server instanceof TlsServer ? 'secureConnection' : 'connection';
  server.on(event, (socket: Socket) => {
    sockets.set(socket, { activity: activityOf(socket), since: performance.now() });
    socket.once('close', () => sockets.delete(socket));
  });
  const timer = setInterval(() => {
    const now = performance.now();
    for (const [socket, seen] of sockets) {
      const activity = activityOf(socket);
      const { read, written, queued } = seen.activity;
      if (activity.read !== read || activity.written !== written || activity.queued !== queued) {
        seen.activity = activity;
        seen.since = now;
      } else if (now - seen.since >= timeoutMs) {
        sockets.delete(socket);
        socket.destroy();
      }
    }
  }, everyMs);
  timer.unref();
  server.once('close', () => clearInterval(timer));
  return { stop: () => clearInterval(timer) };
}

/**
 * Caps the open connections per client address: a connection beyond `max` is closed as soon as
 * it is accepted (before TLS). `onRefuse` is called once each time an address reaches the cap.
 * @example
 * capConnectionsPerIp(app.server, 256, (ip) => app.log.warn({ ip }, 'connection cap reached'));
 */
export function capConnectionsPerIp(server: Server, max: number, onRefuse: (ip: string, open: number) => void = () => undefined): { open(ip: string): number } {
  const open = new Map<string, number>();
  const refusing = new Set<string>();
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? 'unknown';
    const count = open.get(ip) ?? 0;
    if (count >= max) {
      if (!refusing.has(ip)) {
        refusing.add(ip);
        onRefuse(ip, count);
      }
      socket.destroy();
      return;
    }
    open.set(ip, count + 1);
    socket.once('close', () => {
      const left = (open.get(ip) ?? 1) - 1;
      if (left <= 0) open.delete(ip);
      else open.set(ip, left);
      if (left < max) refusing.delete(ip);
    });
  });
  return { open: (ip) => open.get(ip) ?? 0 };
}
