// Parsing command-line values at the edge: a bad value is a usage error (exit 2) naming the
// flag, before any request is sent.
import { InvalidArgumentError } from 'commander';

/** A positive integer id, for commander's argument/option parsers. */
export function parseId(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value.trim()) || !Number.isSafeInteger(Number(value.trim()))) {
    throw new InvalidArgumentError(`expected a positive integer id (at most 9007199254740991), got "${value}"`);
  }
  return Number(value.trim());
}

/** A positive integer count (e.g. --limit). */
export function parseCount(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value.trim())) throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return Number(value.trim());
}

const UNIT_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  y: 365 * 86_400_000,
};

/** `30d`, `12h`, `90m`, `2w`, `1y` (also combined: `1d12h`) → milliseconds. */
export function parseDuration(value: string): number {
  const text = value.trim().toLowerCase();
  const parts = [...text.matchAll(/(\d+)\s*([smhdwy])/g)];
  if (!text || parts.map((p) => p[0]).join('') !== text.replace(/\s+/g, '')) {
    throw new InvalidArgumentError(`expected a duration such as 30d, 12h, 90m, 2w or 1y, got "${value}"`);
  }
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit], 0);
  if (ms <= 0) throw new InvalidArgumentError(`the duration must be longer than zero, got "${value}"`);
  return ms;
}

/** RFC 3339 date-time with an explicit offset (`Z` or `+02:00`). */
export function parseRfc3339(value: string): string {
  const text = value.trim();
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  if (!rfc3339.test(text) || Number.isNaN(Date.parse(text))) {
    throw new InvalidArgumentError(`expected an RFC 3339 time such as 2030-01-31T00:00:00Z, got "${value}"`);
  }
  return text;
}

/** `key=value` pairs of --data. */
export function parseKeyValue(value: string, previous: Array<[string, string]> = []): Array<[string, string]> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected key=value, got "${value}"`);
  return [...previous, [value.slice(0, eq).trim(), value.slice(eq + 1)]];
}

/**
 * A point in time: a duration back from now (`2h`, `30m`, `1d12h`) or an RFC 3339 time;
 * the result is RFC 3339 (UTC for durations).
 * @example
 * parseSince('2h'); // two hours ago, e.g. '2030-01-31T10:00:00.000Z'
 */
export function parseSince(value: string, now = Date.now()): string {
  if (/^\s*\d+\s*[smhdwy]/i.test(value)) {
    try {
      return new Date(now - parseDuration(value)).toISOString();
    } catch {
      // not a duration after all; try RFC 3339 below
    }
  }
  try {
    return parseRfc3339(value);
  } catch {
    throw new InvalidArgumentError(`expected a duration back from now (2h, 30m, 1d) or an RFC 3339 time, got "${value}"`);
  }
}

/** The help of every list command's `-n, --limit <n>`: without it the CLI reads every page. */
export const LIMIT_HELP = 'at most N items (default: all of them, read page by page)';
