// Revocation reaches open streams: a delivery stream or a `listen` session whose credential is
// revoked (key deleted, JWT logged out, user deleted, password reset, role changed) ends within
// a second and gets nothing more. The app in-process, its streams read over loopback HTTP. On
// PostgreSQL the stream is held by a second app on the database (its own store handle and change
// feed, as a second daemon's) and the revocation is made through the first (or by another store
// handle, for the role), so it has to travel through the change feed.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/factory.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import type { TestApp } from '../helpers/app.js';
import { TEST_STORE } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { endpoint, publish, secondApp, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

/** The most a stream may take to end after its revocation was answered (the promise is one second). */
const ENDS_WITHIN_MS = 2_000;

interface OpenStream {
  /** Every `event:` frame's type and data, in order. */
  frames: Array<{ event: string; data: string }>;
  text(): string;
  ended: boolean;
  close(): Promise<void>;
}

/** An app holding streams, and the loopback URL it listens on. */
interface Holder {
  app: TestApp;
  url: string;
}

/** Opens an SSE stream and records its frames until the app ends it. */
async function openStream(holder: Holder, token: string, path: string): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await request(`${holder.url}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  expect(response.statusCode).toBe(200);
  response.body.setEncoding('utf8');
  let text = '';
  const stream: OpenStream = {
    frames: [],
    text: () => text,
    ended: false,
    async close() {
      controller.abort();
    },
  };
  let parsed = 0;
  const connected = new Promise<void>((resolve) => {
    void (async () => {
      try {
        for await (const chunk of response.body) {
          text += chunk;
          if (text.includes(': connected\n\n')) resolve();
          let boundary: number;
          while ((boundary = text.indexOf('\n\n', parsed)) !== -1) {
            const block = text.slice(parsed, boundary);
            parsed = boundary + 2;
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event) stream.frames.push({ event, data: data ?? '' });
          }
        }
      } catch {
        // aborted by close()
      }
      stream.ended = true;
      resolve();
    })();
  });
  await connected;
  return stream;
}

const deliveries = (stream: OpenStream) => stream.frames.filter((f) => f.event === 'delivery').map((f) => JSON.parse(f.data));

describe('revocation reaches open streams', () => {
  let tls: ReceiverTls;
  let hook: Receiver;
  let world: AppWorld;
  /** Where streams are held: a second app on the database on PostgreSQL, else the same app. */
  let holder: Holder;
  let users = 0;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    [world, hook] = await Promise.all([startAppWorld(tls), startReceiver(tls)]);
    const app = world.app.databaseUrl ? await secondApp(world, tls) : world.app;
    holder = { app, url: await app.listen() };
  });
  afterAll(async () => {
    if (holder && holder.app !== world?.app) await holder.app.close();
    await world?.app.close();
    await hook?.close();
    await tls?.dispose();
  });

  async function user(role: 'admin' | 'customer'): Promise<{ id: number; email: string; jwt: string }> {
    const email = `revoke${++users}-${process.pid}@example.test`;
    const created = await world.daemon.request('POST', '/admin/users', {
      token: world.admin,
      body: { email, name: 'Revocation', password: 'revoke-password-1', role },
    });
    expect(created.status, created.text).toBe(201);
    return { id: created.body.data.id, email, jwt: await holder.app.login(email, 'revoke-password-1') };
  }

  async function apiKey(jwt: string): Promise<{ id: number; key: string }> {
    const created = await world.daemon.request('POST', '/auth/api-keys', { token: jwt, body: { name: 'stream' } });
    expect(created.status, created.text).toBe(201);
    return { id: created.body.data.id, key: created.body.data.key };
  }

  /** A customer with an endpoint on the receiver, and a published event's delivery logged. */
  async function customerWithEndpoint() {
    const customer = await user('customer');
    const endpointId = await endpoint(world, customer.jwt, { url: hook.url, events: 'site.created' });
    let sent = 0;
    const deliver = async () => {
      sent++;
      await publish(world, 'site.created', { site_id: sent, domain: `s${sent}.example` }, customer.id);
      await waitForEntries(world, world.admin, endpointId, sent);
    };
    return { customer, endpointId, deliver };
  }

  /** A customer's API key holding a delivery stream that has had one delivery. */
  async function keyStreamWithOneDelivery() {
    const { customer, deliver } = await customerWithEndpoint();
    const key = await apiKey(customer.jwt);
    const stream = await openStream(holder, key.key, '/webhooks/deliveries/stream');
    await deliver();
    await vi.waitFor(() => expect(deliveries(stream)).toHaveLength(1), { timeout: 30_000, interval: 20 });
    return { customer, key, stream, deliver };
  }

  /**
   * Right after the revocation was answered: a delivery is published at once, the stream ends
   * within the bound, and that delivery (logged by then) never reached it.
   */
  async function expectEndedAndSilent(stream: OpenStream, before: number, deliver: () => Promise<void>) {
    const delivered = deliver();
    await vi.waitFor(() => expect(stream.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    await delivered;
    expect(deliveries(stream)).toHaveLength(before);
  }

  it("ends a deleted API key's delivery stream, which gets nothing after the delete", async () => {
    const { customer, key, stream, deliver } = await keyStreamWithOneDelivery();

    const removed = await world.daemon.request('DELETE', `/auth/api-keys/${key.id}`, { token: customer.jwt });
    expect(removed.status, removed.text).toBe(200);
    await expectEndedAndSilent(stream, 1, deliver);
    expect(stream.text()).toContain(': ended: authentication required');
    await stream.close();
  });

  it("ends a deleted admin's stream: it sees no other customer's entry after the delete", async () => {
    const { deliver } = await customerWithEndpoint();
    const admin = await user('admin');
    const stream = await openStream(holder, admin.jwt, '/webhooks/deliveries/stream');
    await deliver();
    await vi.waitFor(() => expect(deliveries(stream).length).toBeGreaterThanOrEqual(1), { timeout: 30_000, interval: 20 });
    const seen = deliveries(stream).length;

    const removed = await world.daemon.request('DELETE', `/admin/users/${admin.id}`, { token: world.admin });
    expect(removed.status, removed.text).toBe(200);
    await expectEndedAndSilent(stream, seen, deliver);
    await stream.close();
  });

  it('ends a logged-out JWT\'s stream, and a password reset ends the others', async () => {
    const { customer, deliver } = await customerWithEndpoint();
    const loggedOut = await openStream(holder, customer.jwt, '/webhooks/deliveries/stream');
    const second = await holder.app.login(customer.email, 'revoke-password-1');
    const reset = await openStream(holder, second, '/webhooks/deliveries/stream');
    await deliver();
    await vi.waitFor(() => expect(deliveries(reset)).toHaveLength(1), { timeout: 30_000, interval: 20 });
    await vi.waitFor(() => expect(deliveries(loggedOut)).toHaveLength(1), { timeout: 30_000, interval: 20 });

    const out = await world.daemon.request('POST', '/auth/logout', { token: customer.jwt });
    expect(out.status, out.text).toBe(200);
    await vi.waitFor(() => expect(loggedOut.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    expect(reset.ended).toBe(false);

    const changed = await world.daemon.request('POST', `/admin/users/${customer.id}/password`, { token: world.admin, body: { password: 'revoke-password-2' } });
    expect(changed.status, changed.text).toBe(200);
    await vi.waitFor(() => expect(reset.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    await deliver();
    expect(deliveries(loggedOut)).toHaveLength(1);
    expect(deliveries(reset)).toHaveLength(1);
    await Promise.all([loggedOut.close(), reset.close()]);
  });

  it("ends a deleted key's listen session and removes its endpoint", async () => {
    const customer = await user('customer');
    const key = await apiKey(customer.jwt);
    const session = await openStream(holder, key.key, '/events/listen?events=site.created');
    await vi.waitFor(() => expect(session.frames.some((f) => f.event === 'session')).toBe(true), { timeout: 10_000, interval: 20 });
    const { endpoint_id: endpointId } = JSON.parse(session.frames.find((f) => f.event === 'session')!.data);

    const removed = await world.daemon.request('DELETE', `/auth/api-keys/${key.id}`, { token: customer.jwt });
    expect(removed.status, removed.text).toBe(200);
    await vi.waitFor(() => expect(session.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    await publish(world, 'site.created', { site_id: 99, domain: 'listen.example' }, customer.id);
    await vi.waitFor(async () => expect((await world.daemon.request('GET', `/webhooks/${endpointId}`, { token: customer.jwt })).status).toBe(404), {
      timeout: 10_000,
      interval: 50,
    });
    expect(session.frames.filter((f) => f.event === 'webhook')).toHaveLength(0);
    await session.close();
  });

  /** Makes every open stream re-check its caller: a settings change concerns them all. */
  async function touchSettings() {
    const current = await world.daemon.request('GET', '/admin/settings', { token: world.admin });
    expect(current.status, current.text).toBe(200);
    const put = await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { login_max_attempts: current.body.data.login_max_attempts } });
    expect(put.status, put.text).toBe(200);
  }

  it('keeps a stream open when a re-check meets the store down for a moment, holding its frames until the caller is vouched for', async () => {
    const { stream, deliver } = await keyStreamWithOneDelivery();

    const lookUp = vi.spyOn(holder.app.store.apiKeys, 'callerByHash').mockRejectedValueOnce(new StoreUnavailableError('the database is restarting'));
    try {
      await touchSettings();
      // The failed look-up, then the one asked again after a pause, which answers.
      await vi.waitFor(() => expect(lookUp.mock.calls.length).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 20 });
      await expect(lookUp.mock.results[1].value).resolves.toBeTruthy();
      await deliver();
      await vi.waitFor(() => expect(deliveries(stream)).toHaveLength(2), { timeout: 30_000, interval: 20 });
      expect(stream.ended).toBe(false);
    } finally {
      lookUp.mockRestore();
      await stream.close();
    }
  });

  it('ends a stream whose caller the store cannot vouch for after asking again, and sends it nothing meanwhile', async () => {
    const { stream, deliver } = await keyStreamWithOneDelivery();

    const lookUp = vi.spyOn(holder.app.store.apiKeys, 'callerByHash').mockRejectedValue(new StoreUnavailableError('the database is down'));
    try {
      await touchSettings();
      await vi.waitFor(() => expect(lookUp).toHaveBeenCalled(), { timeout: 10_000, interval: 20 });
      // Logged while the re-check is out: held, and never sent once the stream ends.
      await deliver();
      await vi.waitFor(() => expect(stream.ended).toBe(true), { timeout: 10_000, interval: 20 });
      expect(lookUp.mock.calls.length).toBeGreaterThan(1);
      expect(stream.text()).toContain(': ended: the credential could not be checked again');
      expect(deliveries(stream)).toHaveLength(1);
    } finally {
      lookUp.mockRestore();
      await stream.close();
    }
  });

  // Roles change only in the store (no route changes one): another store handle changes it there,
  // as an operator's tool would. The JSON store belongs to its daemon; the in-process test covers it.
  it.skipIf(TEST_STORE !== 'postgres')('ends a demoted admin\'s stream when another process changes the role in the database', async () => {
    const { deliver } = await customerWithEndpoint();
    const admin = await user('admin');
    const stream = await openStream(holder, admin.jwt, '/webhooks/deliveries/stream');
    await deliver();
    await vi.waitFor(() => expect(deliveries(stream).length).toBeGreaterThanOrEqual(1), { timeout: 30_000, interval: 20 });
    const seen = deliveries(stream).length;

    const store = await openStore({ dataDir: world.daemon.dataDir, databaseUrl: world.daemon.databaseUrl });
    try {
      await store.users.update(admin.id, { role: 'customer' });
    } finally {
      await store.close();
    }
    await expectEndedAndSilent(stream, seen, deliver);
    expect(stream.text()).toContain("role changed to customer");
    await stream.close();
  });
});
