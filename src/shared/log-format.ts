// How a daemon log line reads for people: one line per event with the local time, the level,
// the message and its key fields. Used by the foreground daemon on a terminal (pino-pretty as
// its stream) and by `panelctl daemon logs` (the same formatter over daemon.log's JSON lines),
// so both read the same.
import type { PrettyOptions } from 'pino-pretty';

/** pino's level numbers. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LevelName = keyof typeof LEVELS;
export const LEVEL_NAMES = Object.keys(LEVELS) as LevelName[];

/** Shown as the message's tail instead of as fields: fastify's request and answer summaries. */
const FOLDED = ['req', 'res', 'responseTime'];

interface RequestFields {
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

/** `request completed GET /api/v1/sites → 200 (1.4 ms)`: fastify's request lines in a few words. */
export function messageOf(log: Record<string, unknown>, messageKey = 'msg'): string {
  const { req, res, responseTime } = log as RequestFields;
  const parts = [String(log[messageKey] ?? '')];
  if (req?.method) parts.push(`${req.method} ${req.url ?? ''}`);
  if (res?.statusCode !== undefined) parts.push(`→ ${res.statusCode}`);
  if (typeof responseTime === 'number') parts.push(`(${responseTime.toFixed(1)} ms)`);
  return parts.filter(Boolean).join(' ');
}

/**
 * pino-pretty's options for one line per event.
 *
 * @example
 * const format = prettyFactory(prettyOptions(false));
 * format('{"level":40,"time":1700000000000,"msg":"delivery failed","endpoint_id":3}');
 */
export function prettyOptions(colorize: boolean): PrettyOptions {
  return {
    colorize,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    ignore: ['pid', 'hostname', ...FOLDED].join(','),
    singleLine: true,
    messageFormat: (log, messageKey) => messageOf(log, messageKey),
  };
}

/** The level number of a log line's JSON, or null for a line that is not one of pino's. */
export function levelOf(line: string): number | null {
  if (!line.startsWith('{')) return null;
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === 'number' ? level : null;
  } catch {
    return null;
  }
}
