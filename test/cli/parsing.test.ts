// Parsing at the CLI's edge, in process: argv → the command that runs and its options, and the
// value parsers (durations, RFC 3339, ids, --data pairs, setting values).
import { PassThrough } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseDuration, parseId, parseKeyValue, parseRfc3339 } from '../../src/cli/args.js';
import { eventData } from '../../src/cli/commands/events/emit.js';
import { expiryOf } from '../../src/cli/commands/keys/create.js';
import { parseSettingValue, settingKinds } from '../../src/cli/commands/settings/types.js';
import type { Io } from '../../src/cli/context.js';
import { buildProgram, targetCommand } from '../../src/cli/program.js';

function fakeIo(): Io {
  const sink = () => Object.assign(new PassThrough(), { isTTY: false });
  return { stdout: sink(), stderr: sink(), stdin: sink(), env: {} };
}

describe('argv parsing', () => {
  it('finds the top-level command behind global options and their values', async () => {
    const { program } = await buildProgram({ args: [] });
    expect(targetCommand(program, ['--url', 'https://x', '--json', 'keys', 'list'])).toBe('keys');
    expect(targetCommand(program, ['--data-dir=/tmp/d', 'webhooks', 'create'])).toBe('webhooks');
    expect(targetCommand(program, ['help', 'settings'])).toBe('settings');
    expect(targetCommand(program, ['--help'])).toBeNull();
    expect(targetCommand(program, ['kyes'])).toBeNull();
    expect(targetCommand(program, [])).toBeNull();
  });

  it('loads only the command that runs, or the whole tree', async () => {
    const one = await buildProgram({ args: ['keys', 'list'], io: fakeIo() });
    expect(one.program.commands.map((c) => c.name())).toEqual(['keys']);
    const all = await buildProgram({ io: fakeIo() });
    expect(all.program.commands.map((c) => c.name())).toEqual([
      'init', 'daemon', 'login', 'logout', 'whoami', 'keys', 'webhooks', 'listen', 'events', 'sites', 'subscriptions', 'users', 'admin', 'store', 'settings', '2fa', 'watch', 'completion',
    ]);
  });

  it('builds only the verb that runs, as the whole tree builds it; every verb for help and unknown verbs', async () => {
    const all = await buildProgram({ io: fakeIo() });
    const shape = (command: Command) => ({
      name: command.name(),
      options: command.options.map((o) => `${o.flags}${o.hidden ? ' (hidden)' : ''}`),
      commands: command.commands.map((c) => c.name()),
    });
    let verbs = 0;
    for (const noun of all.program.commands.filter((c) => c.commands.length > 0)) {
      for (const verb of noun.commands) {
        const one = await buildProgram({ args: ['--json', noun.name(), verb.name(), '--help'], io: fakeIo() });
        const [built] = one.program.commands;
        expect(built.commands.map((c) => c.name())).toEqual([verb.name()]);
        expect(shape(built.commands[0])).toEqual(shape(verb));
        verbs++;
      }
    }
    expect(verbs).toBeGreaterThan(30);
    const keysVerbs = ['create', 'list', 'delete'];
    for (const args of [['keys'], ['keys', 'lst'], ['keys', '--help'], ['help', 'keys', 'list'], ['keys', '--json', 'list']]) {
      const { program } = await buildProgram({ args, io: fakeIo() });
      expect(program.commands[0].commands.map((c) => c.name()), args.join(' ')).toEqual(keysVerbs);
    }
  });

  it('takes global options before or after the command, the command’s own --url after it', async () => {
    const seen: Record<string, unknown> = {};
    const { program, ctx } = await buildProgram({ args: ['webhooks'], io: fakeIo() });
    const create = program.commands.find((c) => c.name() === 'webhooks')!.commands.find((c) => c.name() === 'create')! as Command;
    create.action(function (this: Command, options: Record<string, unknown>) {
      Object.assign(seen, { webhookUrl: options.url, globals: ctx.globals });
    });
    await program.parseAsync(['--url', 'https://daemon:3443', 'webhooks', 'create', '--url', 'https://hook.example/x', '--events', '*', '--json', '--token', 't'], { from: 'user' });
    expect(seen.webhookUrl).toBe('https://hook.example/x');
    expect(seen.globals).toMatchObject({ url: 'https://daemon:3443', json: true, token: 't' });
  });
});

describe('value parsers', () => {
  it('durations, RFC 3339 times and ids', () => {
    expect(parseDuration('30d')).toBe(30 * 86_400_000);
    expect(parseDuration('1d12h')).toBe(36 * 3_600_000);
    expect(parseDuration('90m')).toBe(90 * 60_000);
    for (const bad of ['', '30', 'd', '30x', '-1d', '0d', '1d 2']) expect(() => parseDuration(bad), bad).toThrow();
    expect(parseRfc3339('2030-01-31T00:00:00Z')).toBe('2030-01-31T00:00:00Z');
    expect(parseRfc3339('2030-01-31T00:00:00.5+02:00')).toBe('2030-01-31T00:00:00.5+02:00');
    for (const bad of ['2030-01-31', '2030-01-31T00:00:00', 'tomorrow', '2030-13-01T00:00:00Z']) expect(() => parseRfc3339(bad), bad).toThrow();
    expect(parseId('42')).toBe(42);
    for (const bad of ['0', '-1', '1.5', 'x', '']) expect(() => parseId(bad), bad).toThrow();
    expect(expiryOf({ expiresIn: 86_400_000, now: () => Date.parse('2030-01-01T00:00:00.250Z') })).toBe('2030-01-02T00:00:00Z');
  });

  it('--data pairs: integer catalogue fields become numbers, the rest stay strings', () => {
    const pairs = ['site_id=7', 'domain=a=b.example'].reduce<Array<[string, string]>>((acc, v) => parseKeyValue(v, acc), []);
    expect(eventData({ site_id: 'integer', domain: 'string' }, pairs)).toEqual({ site_id: 7, domain: 'a=b.example' });
    expect(eventData({ site_id: 'integer' }, [['site_id', 'seven']])).toEqual({ site_id: 'seven' });
    expect(() => parseKeyValue('novalue')).toThrow();
    expect(() => eventData({}, [['a', '1'], ['a', '2']])).toThrow(/twice/);
  });

  it('setting values by the type of the shared schema', async () => {
    const kinds = await settingKinds();
    expect(kinds.jwt_ttl_seconds.kind).toBe('integer');
    expect(kinds.rate_limit_mode).toEqual({ kind: 'enum', values: ['both', 'requests', 'lockout'] });
    expect(kinds.webhook_allow_private_networks.kind).toBe('boolean');
    expect(parseSettingValue('jwt_ttl_seconds', '3600', kinds.jwt_ttl_seconds)).toBe(3600);
    expect(parseSettingValue('webhook_allow_private_networks', 'off', kinds.webhook_allow_private_networks)).toBe(false);
    expect(parseSettingValue('rate_limit_mode', 'lockout', kinds.rate_limit_mode)).toBe('lockout');
    expect(() => parseSettingValue('jwt_ttl_seconds', '1h', kinds.jwt_ttl_seconds)).toThrow(/integer/);
    expect(() => parseSettingValue('rate_limit_mode', 'never', kinds.rate_limit_mode)).toThrow(/both, requests, lockout/);
  });
});
