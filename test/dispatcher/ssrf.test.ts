// The SSRF guard: address classification, the checking DNS lookup (rebinding-safe: the
// resolved address is what is checked), and the app's dispatcher (in-process, posting with the
// daemon's sender to a real receiver) refusing a name that resolves to 127.0.0.1 unless private
// targets are allowed by setting.
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockedTargetError, blockedReason, checkLiteralHost, guardedLookup } from '../../src/daemon/dispatcher/ssrf.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, SITE, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

describe('blocked address ranges', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.0.10', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT (shared)'],
    ['100.127.255.255', 'carrier-grade NAT (shared)'],
    ['0.0.0.0', 'unspecified ("this network")'],
    ['224.0.0.251', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback'],
    ['::ffff:10.1.1.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
    ['64:ff9b::10.0.0.1', 'NAT64 private'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['2002:7f00:1::1', '6to4 loopback'],
    ['[::1]', 'loopback'],
    // IPv4 embedded in IPv6 in every form a URL can carry it (issue 19).
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
    ['::ffff:0:7f00:1', 'IPv4-translated loopback'],
    ['::ffff:0:10.0.0.1', 'IPv4-translated private'],
    ['::ffff:0:169.254.169.254', 'IPv4-translated link-local'],
    ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['64:ff9b::192.168.1.1', 'NAT64 private'],
    ['64:ff9b:1::1', 'NAT64 local-use'],
    ['::10.0.0.1', 'IPv4-compatible (deprecated)'],
    ['::8.8.8.8', 'IPv4-compatible (deprecated)'],
    ['2002:a00:1::1', '6to4 private'],
    ['2002:c0a8:101::1', '6to4 private'],
    ['2002:a9fe:a9fe::', '6to4 link-local'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo tunnel (embeds IPv4)'],
  ])('%s is refused (%s)', (address, reason) => {
    expect(blockedReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '192.0.3.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8', '64:ff9b::8.8.8.8', '2002:0808:0808::1', '2001:4860:4860::8888'])(
    '%s is allowed',
    (address) => {
      expect(blockedReason(address)).toBeNull();
    },
  );
});

describe('the literal-address check at connect time', () => {
  it.each(['::ffff:0:7f00:1', '[::ffff:0:127.0.0.1]', '64:ff9b::7f00:1', '::7f00:1', '2002:7f00:1::1'])('refuses %s', (host) => {
    expect(checkLiteralHost(host)).toBeInstanceOf(BlockedTargetError);
  });
  it('lets a public literal and a host name through (names are checked by the lookup)', () => {
    expect(checkLiteralHost('::ffff:0:808:808')).toBeNull();
    expect(checkLiteralHost('hooks.example.com')).toBeNull();
  });
});

describe('the checking lookup', () => {
  const fake = (addresses: LookupAddress[]) =>
    ((_host: string, _options: unknown, callback: (error: Error | null, addresses: LookupAddress[]) => void) =>
      callback(null, addresses)) as never;

  function run(addresses: LookupAddress[], all: boolean): Promise<{ error: Error | null; result: unknown }> {
    return new Promise((resolve) =>
      guardedLookup(fake(addresses))('rebind.example', { all } as never, (error, result) => resolve({ error, result })),
    );
  }

  it('refuses a name that resolves only to IPv4-embedding IPv6 forms of internal addresses', async () => {
    for (const address of ['::ffff:0:127.0.0.1', '64:ff9b::a00:1', '::7f00:1', '2002:7f00:1::1']) {
      const { error } = await run([{ address, family: 6 }], false);
      expect([address, error]).toEqual([address, expect.any(BlockedTargetError)]);
    }
  });

  it('refuses a name that resolves only to blocked addresses, naming them', async () => {
    const { error } = await run([{ address: '127.0.0.1', family: 4 }], false);
    expect(error).toBeInstanceOf(BlockedTargetError);
    expect(error!.message).toMatch(/^refused: rebind\.example resolves to 127\.0\.0\.1, a loopback address/);
  });

  it('connects only to the allowed addresses of a name that also resolves to blocked ones', async () => {
    const mixed = [
      { address: '10.0.0.5', family: 4 },
      { address: '93.184.215.14', family: 4 },
      { address: '::1', family: 6 },
    ];
    expect(await run(mixed, true)).toEqual({ error: null, result: [{ address: '93.184.215.14', family: 4 }] });
    expect(await run(mixed, false)).toEqual({ error: null, result: '93.184.215.14' });
  });
});

describe('the dispatcher without private targets allowed', () => {
  let tls: ReceiverTls;
  let world: AppWorld;
  let hook: Receiver;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    [world, hook] = await Promise.all([startAppWorld(tls, { allowPrivate: false }), startReceiver(tls)]);
  });
  afterAll(async () => {
    await world?.app.close();
    await hook?.close();
    await tls?.dispose();
  });

  it('refuses localhost (127.0.0.1) at connect time, and delivers once the setting allows private targets', async () => {
    const { id: ownerId, token } = await customer(world);
    const url = `https://localhost:${hook.port}/hook`;
    const id = await endpoint(world, token, { url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    const log = await waitForEntries(world, token, id, 2, 10_000);
    for (const entry of log) {
      expect(entry).toMatchObject({ success: false, status_code: 0 });
      expect(entry.response).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address; .*webhook_allow_private_networks/);
    }
    expect(hook.requests).toHaveLength(0);

    const allow = await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_allow_private_networks: true } });
    expect(allow.status).toBe(200);
    const test = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(test.body.data).toMatchObject({ success: true, status_code: 200 });
    expect(hook.requests).toHaveLength(1);
    // Literal private addresses are accepted too while allowed.
    const literal = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { url: hook.url } });
    expect(literal.status).toBe(200);

    // Refused again as soon as the setting is turned off, kept-alive connections notwithstanding.
    await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_allow_private_networks: false } });
    const refused = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(refused.body.data).toMatchObject({ success: false, status_code: 0, response: expect.stringMatching(/^refused: 127\.0\.0\.1, a loopback address/) });
    expect(hook.requests).toHaveLength(1);

    // A URL accepted while allowed that embeds 127.0.0.1 in IPv6 is refused at connect time too.
    await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_allow_private_networks: true } });
    const embedded = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { url: `https://[::ffff:0:127.0.0.1]:${hook.port}/hook` } });
    expect(embedded.status).toBe(200);
    await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_allow_private_networks: false } });
    const refusedEmbedded = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(refusedEmbedded.body.data).toMatchObject({
      success: false,
      status_code: 0,
      response: expect.stringMatching(/^refused: ::ffff:0:7f00:1, a IPv4-translated loopback address/),
    });
    expect(hook.requests).toHaveLength(1);
  });
});
