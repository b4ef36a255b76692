// The SSRF guard: which addresses a webhook may not reach (loopback, private, link-local, CGNAT,
// unique-local, multicast, unspecified, reserved; IPv4, IPv6 and IPv4 embedded in IPv6), and a
// DNS lookup that drops them, so the check applies to the address actually connected to.
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';

interface Range4 {
  base: number;
  bits: number;
  kind: string;
}

function ipv4ToInt(address: string): number {
  const parts = address.split('.').map(Number);
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

function range4(cidr: string, kind: string): Range4 {
  const [base, bits] = cidr.split('/');
  return { base: ipv4ToInt(base), bits: Number(bits), kind };
}

const BLOCKED_V4: readonly Range4[] = [
  range4('0.0.0.0/8', 'unspecified ("this network")'),
  range4('10.0.0.0/8', 'private'),
  range4('100.64.0.0/10', 'carrier-grade NAT (shared)'),
  range4('127.0.0.0/8', 'loopback'),
  range4('169.254.0.0/16', 'link-local'),
  range4('172.16.0.0/12', 'private'),
  range4('192.0.0.0/24', 'IETF protocol assignment'),
  range4('192.0.2.0/24', 'documentation'),
  range4('192.88.99.0/24', '6to4 relay anycast'),
  range4('192.168.0.0/16', 'private'),
  range4('198.18.0.0/15', 'benchmarking'),
  range4('198.51.100.0/24', 'documentation'),
  range4('203.0.113.0/24', 'documentation'),
  range4('224.0.0.0/4', 'multicast'),
  range4('240.0.0.0/4', 'reserved or broadcast'),
];

function classifyV4(address: string): string | null {
  const value = ipv4ToInt(address);
  for (const range of BLOCKED_V4) {
    const mask = range.bits === 0 ? 0 : (~0 << (32 - range.bits)) >>> 0;
    if ((value & mask) >>> 0 === (range.base & mask) >>> 0) return range.kind;
  }
  return null;
}

/** Parses a valid IPv6 address (zone id allowed) into its eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0].toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    // A trailing dotted quad is two groups: ::ffff:1.2.3.4 is ::ffff:102:304.
    const v4 = ipv4ToInt(last);
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const parse = (part: string) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  if (!text.includes('::')) return parse(text);
  const [head, tail] = text.split('::');
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

function embeddedV4(groups: number[]): string {
  return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
}

function classifyV6(address: string): string | null {
  const g = ipv6Groups(address);
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return 'unspecified';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 6145) and NAT64
  // (64:ff9b::a.b.c.d) reach the embedded IPv4 address: they are judged by it.
  if (zeroUpTo(5) && g[5] === 0xffff) {
    const kind = classifyV4(embeddedV4(g));
    return kind ? `IPv4-mapped ${kind}` : null;
  }
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) {
    const kind = classifyV4(embeddedV4(g));
    return kind ? `IPv4-translated ${kind}` : null;
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const kind = classifyV4(embeddedV4(g));
    return kind ? `NAT64 ${kind}` : null;
  }
  if (zeroUpTo(6)) return 'IPv4-compatible (deprecated)';
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'NAT64 local-use';
  if (g[0] === 0x0100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return 'discard-only';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'documentation';
  // Teredo (2001::/32) tunnels to an IPv4 server and an obfuscated IPv4 client: neither is a
  // webhook receiver's address, and the client half can name any internal host.
  if (g[0] === 0x2001 && g[1] === 0) return 'Teredo tunnel (embeds IPv4)';
  if (g[0] === 0x2002) {
    // 6to4 carries an IPv4 address in groups 1-2.
    const kind = classifyV4([g[1] >> 8, g[1] & 0xff, g[2] >> 8, g[2] & 0xff].join('.'));
    return kind ? `6to4 ${kind}` : null;
  }
  if ((g[0] & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0] & 0xffc0) === 0xfec0) return 'site-local (deprecated)';
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  return null;
}

/**
 * Why an IP address is not a permitted webhook target (e.g. `loopback`), or null when it is.
 * @example
 * blockedReason('10.1.2.3'); // 'private'
 * blockedReason('::ffff:127.0.0.1'); // 'IPv4-mapped loopback'
 */
export function blockedReason(address: string): string | null {
  const ip = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const version = isIP(ip.split('%')[0]);
  if (version === 4) return classifyV4(ip);
  if (version === 6) return classifyV6(ip);
  return null;
}

/** The host of a URL when it is a literal IP address in a blocked range, with the reason. */
export function blockedLiteral(url: URL): { address: string; reason: string } | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return null;
  const reason = blockedReason(host);
  return reason ? { address: host, reason } : null;
}

/** Raised when a webhook target resolves only to blocked addresses. */
export class BlockedTargetError extends Error {
  readonly code = 'EBLOCKEDTARGET';
  constructor(
    host: string,
    /** The refused address, and what kind it is (`private`, `loopback`…), for short reasons. */
    readonly address: string,
    readonly kind: string,
  ) {
    super(
      `refused: ${host === address ? address : `${host} resolves to ${address}`}, a ${kind} address; webhook targets in private networks are not allowed ` +
        '(admin setting webhook_allow_private_networks, or daemon flag --allow-private-webhooks)',
    );
    this.name = 'BlockedTargetError';
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Resolver = typeof dnsLookup;

/**
 * A `dns.lookup` replacement for socket connects that leaves out blocked addresses and fails
 * when none is left, so a name that resolves (or is rebound) to an internal address is refused.
 */
export function guardedLookup(resolve: Resolver = dnsLookup) {
  return function lookup(hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as LookupAddress[];
      const allowed = list.filter((a) => blockedReason(a.address) === null);
      if (allowed.length === 0) {
        const first = list[0];
        const reason = first ? (blockedReason(first.address) ?? 'blocked') : 'unresolvable';
        return callback(new BlockedTargetError(hostname, first?.address ?? hostname, reason), '');
      }
      if ((options as LookupAllOptions).all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    });
  };
}

/** Whether a literal host given to connect() must be refused (lookup is skipped for literals). */
export function checkLiteralHost(hostname: string): BlockedTargetError | null {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return null;
  const reason = blockedReason(host);
  return reason ? new BlockedTargetError(host, host, reason) : null;
}
