// The small pure parts of issue 19's hardening: query redaction, limits from the environment,
// what counts as a panelctl daemon's command line, and the query validators' empty-query shortcut.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, limitsFromEnv } from '../../src/daemon/limits.js';
import { isDaemonCommand } from '../../src/daemon/lock.js';
import { presentedCredential } from '../../src/daemon/plugins/auth.js';
import { nulPath, validatorCompiler } from '../../src/daemon/plugins/validation.js';
import { redactQuery } from '../../src/daemon/request-logger.js';

describe('presentedCredential', () => {
  const read = (authorization: string) => {
    try {
      return presentedCredential({ headers: { authorization } } as unknown as FastifyRequest);
    } catch (error) {
      return `refused: ${(error as Error).message}`;
    }
  };
  it('reads "Bearer <credential>" in every spelling the header rule allows, and refuses the rest', () => {
    const key = `ncp_${'ab'.repeat(32)}`;
    expect(read(`Bearer ${key}`)).toBe(key);
    expect(read('Bearer a.b-c_d~e+f/g=')).toBe('a.b-c_d~e+f/g=');
    expect(read(`bearer ${key}`)).toBe(key);
    expect(read(`Bearer  ${key}`)).toBe(key);
    expect(read(`Bearer\t${key}`)).toBe(key);
    expect(read(`Bearer ${key} `)).toBe(key);
    expect(read('Bearer clé')).toBe('clé');
    for (const header of ['Bearer ', 'Bearer', `Bearer ${key} x`, `Bearer ${key}\u00a0x`, 'Basic YWRtaW46eA==', `Token ${key}`]) {
      expect(read(header)).toMatch(/^refused: authentication required: the Authorization header must be "Bearer <token>"$/);
    }
  });
});

describe('redactQuery', () => {
  it.each([
    ['/api/v1/sites', '/api/v1/sites'],
    ['/api/v1/sites?', '/api/v1/sites?'],
    ['/api/v1/sites?api_key=ncp_0123&subscription_id=4', '/api/v1/sites?api_key=[redacted]&subscription_id=[redacted]'],
    ['/api/v1/health?token=a=b', '/api/v1/health?token=[redacted]'],
    ['/api/v1/health?flag', '/api/v1/health?flag'],
    [`/api/v1/health?ncp_${'0'.repeat(64)}`, '/api/v1/health?[redacted]'],
  ])('%s → %s', (url, logged) => {
    expect(redactQuery(url)).toBe(logged);
  });
});

describe('limitsFromEnv', () => {
  it('gives the defaults, overridden by the environment', () => {
    expect(limitsFromEnv({})).toEqual(DEFAULT_LIMITS);
    expect(limitsFromEnv({ PANELCTL_MAX_CONNECTIONS_PER_IP: '4', PANELCTL_REQUEST_TIMEOUT_MS: '2000', PANELCTL_HEADERS_TIMEOUT_MS: '500' })).toMatchObject({
      maxConnectionsPerIp: 4,
      requestTimeoutMs: 2000,
      headersTimeoutMs: 500,
    });
  });
  it('refuses a value that is not a positive integer, naming the variable', () => {
    expect(() => limitsFromEnv({ PANELCTL_KEEPALIVE_TIMEOUT_MS: '1e3' })).toThrow('PANELCTL_KEEPALIVE_TIMEOUT_MS must be a positive integer, got "1e3"');
    expect(() => limitsFromEnv({ PANELCTL_MAX_CONNECTIONS_PER_IP: '0' })).toThrow(/PANELCTL_MAX_CONNECTIONS_PER_IP/);
    expect(() => limitsFromEnv({ PANELCTL_HEADERS_TIMEOUT_MS: '60000' })).toThrow(/must not exceed PANELCTL_REQUEST_TIMEOUT_MS/);
  });
});

describe('isDaemonCommand', () => {
  it.each([
    [['node', '/work/panelctl/bin/panelctl.js', 'daemon', 'start', '--foreground'], true],
    [['/usr/bin/node', '/usr/local/bin/panelctl', '--data-dir', '/srv/p', 'daemon', 'start'], true],
    [['node', '/work/panelctl/bin/panelctl.js', 'daemon', 'status'], false],
    [['node', '-e', 'setInterval(() => {}, 1000)'], false],
    [['sleep', '100'], false],
    [['node', '/opt/other/daemon.js', 'daemon', 'start'], false],
  ])('%j → %s', (argv, expected) => {
    expect(isDaemonCommand(argv)).toBe(expected);
  });
});

describe('nulPath', () => {
  it('names the first string holding a NUL, in field order, and null when none does', () => {
    expect(nulPath({ event: 'site.created', data: { site_id: 1, domain: 'a.example' } })).toBeNull();
    expect(nulPath({ event: 'site.created', data: { site_id: 1, domain: 'a\0.example', name: 'b\0' } })).toBe('data.domain');
    expect(nulPath({ tags: ['ok', 'n\0'] })).toBe('tags.1');
    expect(nulPath('\0')).toBe('');
    expect(nulPath(undefined)).toBeNull();
  });

  it('walks a deeply nested body without exhausting the stack, and reads no bytes as text', () => {
    let deep: unknown = 'x\0';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(nulPath(deep)).toBe(`${'0.'.repeat(200_000)}`.slice(0, -1));
    expect(nulPath({ raw: Buffer.from('a\0b') })).toBeNull();
  });
});

describe('validatorCompiler', () => {
  type Check = ((data: unknown, context?: unknown) => boolean) & { errors?: unknown[] | null };
  const compile = (schema: object, httpPart = 'querystring') => validatorCompiler({ schema, httpPart, method: 'GET', url: '/x' }) as Check;

  it('answers empty queries as the validator does, and still validates every query that is not empty', () => {
    const check = compile({ type: 'object', properties: { limit: { type: 'integer', minimum: 1 } }, additionalProperties: false });
    for (let i = 0; i < 3; i++) {
      expect(check(Object.create(null))).toBe(true);
      expect(check.errors).toBeNull();
    }
    const bad = { limit: '0' };
    expect(check(bad)).toBe(false);
    expect(check.errors).toEqual([expect.objectContaining({ instancePath: '/limit' })]);
    expect(check({ other: '1' })).toBe(false);
    const good = { limit: '5' };
    expect(check(good)).toBe(true);
    expect(good).toEqual({ limit: 5 });
    expect(check({})).toBe(true);
    expect(check.errors).toBeNull();
  });

  it('keeps filling in defaults and refusing required fields on empty queries', () => {
    const withDefault = compile({ type: 'object', properties: { limit: { type: 'integer', default: 10 } } });
    for (let i = 0; i < 3; i++) {
      const query: Record<string, unknown> = {};
      expect(withDefault(query)).toBe(true);
      expect(query).toEqual({ limit: 10 });
    }
    const required = compile({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
    for (let i = 0; i < 3; i++) {
      expect(required({})).toBe(false);
      expect(required.errors).toEqual([expect.objectContaining({ keyword: 'required' })]);
    }
  });
});
