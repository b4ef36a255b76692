// Why a webhook attempt failed, in a few words a person reads at a glance in a table or a log
// line: `HTTP 500`, `timeout after 10 s`, `connection refused`, `TLS: self-signed certificate`,
// `blocked: private address 10.0.0.5`. The full detail stays in the log entry's `response`.
import { BlockedTargetError } from './ssrf.js';

type ErrnoLike = Error & { code?: string; cause?: unknown; hostname?: string };

/** TLS verification codes (OpenSSL's and Node's) and how they read. */
const TLS_REASONS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificate signed by an unknown authority',
  UNABLE_TO_GET_ISSUER_CERT: 'certificate signed by an unknown authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'certificate signed by an unknown authority',
  CERT_HAS_EXPIRED: 'certificate expired',
  CERT_NOT_YET_VALID: 'certificate not yet valid',
  CERT_REVOKED: 'certificate revoked',
  CERT_SIGNATURE_FAILURE: 'bad certificate signature',
  ERR_TLS_CERT_ALTNAME_INVALID: 'certificate does not match the host name',
  HOSTNAME_MISMATCH: 'certificate does not match the host name',
  ERR_SSL_WRONG_VERSION_NUMBER: 'the receiver does not speak TLS on this port',
  EPROTO: 'handshake failed',
};

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed by the receiver',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connect timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
};

/** The reason of an answer: null for 2xx, `redirect not followed (HTTP 301)` for 3xx, else `HTTP 500`. */
export function statusReason(status: number): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `redirect not followed (HTTP ${status})`;
  return `HTTP ${status}`;
}

/** `timeout after 10 s` (sub-second limits, used by tests, keep their decimals). */
export function timeoutReason(timeoutMs: number): string {
  return `timeout after ${Number((timeoutMs / 1000).toFixed(3))} s`;
}

/** The errors an attempt threw, outermost first (undici wraps the socket's error in `cause`). */
function chain(error: unknown): ErrnoLike[] {
  const out: ErrnoLike[] = [];
  let current = error;
  while (current instanceof Error && out.length < 5) {
    out.push(current as ErrnoLike);
    current = (current as ErrnoLike).cause;
  }
  return out;
}

/**
 * Why a request that got no answer failed.
 * @example
 * errorReason(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })); // 'connection refused'
 */
export function errorReason(error: unknown): string {
  const errors = chain(error);
  const blocked = errors.find((e): e is BlockedTargetError => e instanceof BlockedTargetError);
  if (blocked) return `blocked: ${blocked.kind} address ${blocked.address}`;
  for (const e of errors) {
    const code = e.code ?? '';
    if (TLS_REASONS[code]) return `TLS: ${TLS_REASONS[code]}`;
    if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return `TLS: ${e.message.replace(/^.*?:\s*/, '') || code}`;
    if (code === 'ENOTFOUND') return `DNS: ${e.hostname ?? 'host'} not found`;
    if (code === 'EAI_AGAIN') return `DNS: lookup of ${e.hostname ?? 'the host'} failed (temporary)`;
    if (NETWORK_REASONS[code]) return NETWORK_REASONS[code];
  }
  const root = errors[errors.length - 1];
  return root ? `connection error: ${root.message}` : 'connection error';
}
