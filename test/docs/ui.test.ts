// The interactive reference in a real browser: headless Chromium (Debian's package) driven by
// playwright-core loads /api/docs from the in-process app (listening on loopback), authorizes
// through the page with an API key (X-API-Key) and with a JWT (Bearer), and runs "Try it out" →
// Execute on GET /auth/me: the page shows 200.
// Skipped with a message when Chromium is not installed (.ci/run installs it).
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_EMAIL } from '../helpers/daemon.js';

const CHROMIUM = process.env.PANELCTL_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`skipping the /api/docs browser test: ${CHROMIUM} not found (apt-get install chromium)`);

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe.skipIf(!haveChromium)('/api/docs in headless Chromium', () => {
  let daemon: TestApp;
  /** Where the app listens: loopback, plain HTTP (the page is the point here, not TLS). */
  let base: string;
  let apiKey: string;
  let profile: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    daemon = await buildTestApp();
    base = await daemon.listen();
    const created = await daemon.request('POST', '/auth/api-keys', { token: await daemon.login(), body: { name: 'docs page test' } });
    expect(created.status).toBe(201);
    apiKey = created.body.data.key;
    profile = await mkdtemp(join(tmpdir(), 'panelctl-chromium-'));
    // A fresh profile (launchPersistentContext passes it as --user-data-dir).
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      timeout: 60_000,
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 90_000);

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await daemon?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  async function authorize(scheme: 'apiKey' | 'bearer', value: string) {
    await page.locator('button.authorize').first().click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    // Each scheme has its own form, told apart by its input.
    const input = scheme === 'apiKey' ? '#api_key_value' : '#auth-bearer-value';
    const form = dialog.locator('.auth-container').filter({ has: page.locator(input) });
    await form.locator(input).fill(value);
    await form.locator('button.authorize').click();
    // Once authorized the form shows a Logout button instead of its input.
    await expect.poll(() => dialog.locator('button', { hasText: 'Logout' }).count()).toBe(1);
    await dialog.locator('button.btn-done').first().click();
  }

  async function logoutAll() {
    await page.locator('button.authorize').first().click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    for (const button of await dialog.locator('button', { hasText: 'Logout' }).all()) await button.click();
    await dialog.locator('button.btn-done').first().click();
  }

  async function executeMe(): Promise<{ status: string; body: string; headers: Record<string, string> }> {
    const sent = page.waitForRequest((request) => request.url().endsWith('/api/v1/auth/me'));
    const operation = page.locator('#operations-auth-get_auth_me');
    if (!(await operation.locator('button.execute, button.try-out__btn').count())) await operation.locator('.opblock-summary').first().click();
    const tryOut = operation.locator('button.try-out__btn');
    if ((await tryOut.textContent())?.includes('Try it out')) await tryOut.click();
    await operation.locator('button.execute').click();
    const response = operation.locator('.live-responses-table .response').first();
    await response.waitFor({ timeout: 20_000 });
    const status = (await response.locator('.response-col_status').textContent())?.trim() ?? '';
    const body = (await operation.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '';
    // Clear the result so the next execution is read fresh.
    const clear = operation.locator('button.btn-clear');
    if (await clear.count()) await clear.click();
    return { status, body, headers: (await sent).headers() };
  }

  it('loads the reference from the daemon itself', async () => {
    const external: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(base) && !request.url().startsWith('data:')) external.push(request.url());
    });
    await page.goto(`${base}/api/docs`, { waitUntil: 'load', timeout: 30_000 });
    await expect.poll(() => page.locator('.swagger-ui .info .title').textContent(), { timeout: 30_000 }).toContain('panelctl');
    await page.locator('#operations-auth-get_auth_me').waitFor();
    expect(await page.locator('.opblock-tag-section').count()).toBeGreaterThanOrEqual(4);
    // The outgoing webhooks are rendered too, one entry per catalogue event.
    expect(await page.getByText('site.created: website created').count()).toBeGreaterThan(0);
    expect(external).toEqual([]);
  }, 60_000);

  it('runs "Try it out" on GET /auth/me authorized with an API key in X-API-Key', async () => {
    const before = await executeMe();
    expect(before.status).toBe('401');
    await authorize('apiKey', apiKey);
    const after = await executeMe();
    expect(after.status).toBe('200');
    expect(after.body).toContain(ADMIN_EMAIL);
    expect(after.body).toContain('"error": null');
    expect(after.headers['x-api-key']).toBe(apiKey);
    expect(after.headers.authorization).toBeUndefined();
  }, 60_000);

  it('runs it authorized with a JWT as Bearer', async () => {
    await logoutAll();
    await authorize('bearer', await daemon.login());
    const result = await executeMe();
    expect(result.status).toBe('200');
    expect(result.body).toContain(ADMIN_EMAIL);
    expect(result.headers.authorization).toMatch(/^Bearer ey/);
    expect(result.headers['x-api-key']).toBeUndefined();
  }, 60_000);
});
