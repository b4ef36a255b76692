// How /api/docs looks in a real browser (headless Chromium via playwright-core, the page served
// by the in-process app on loopback): the top bar shows the panelctl mark (not fastify's), every
// code chip of the error table stays whole and inside its own cell at a wide and a narrow window,
// and no operation summary shows a raw backtick. Screenshots of the top bar and the error table are taken and checked, and kept in
// PANELCTL_SCREENSHOT_DIR when set (to look at). Skipped with a message without Chromium.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = process.env.PANELCTL_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`skipping the /api/docs look test: ${CHROMIUM} not found (apt-get install chromium)`);

/** The little of the DOM these checks read in the page (the tests compile without the DOM library). */
interface Rect {
  left: number;
  right: number;
  top: number;
  bottom: number;
  width: number;
}
interface PageElement {
  getBoundingClientRect(): Rect;
  getClientRects(): { length: number };
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  textContent: string | null;
  src: string;
  complete: boolean;
  naturalWidth: number;
}

/** A PNG's width and height, from its IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe.skipIf(!haveChromium)('the look of /api/docs in headless Chromium', () => {
  let daemon: TestApp;
  /** Where the app listens: loopback, plain HTTP (the page is the point here, not TLS). */
  let base: string;
  let browser: Browser;
  let shots: string;

  beforeAll(async () => {
    daemon = await buildTestApp();
    base = await daemon.listen();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'], timeout: 60_000 });
    shots = process.env.PANELCTL_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'panelctl-shots-')));
    await mkdir(shots, { recursive: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await daemon?.close();
    if (shots && !process.env.PANELCTL_SCREENSHOT_DIR) await rm(shots, { recursive: true, force: true });
  });

  /**
   * The page at a window width, loaded once and read by every test of that width: the checks
   * only look (and scroll), and loading Swagger UI is most of each test's time.
   */
  const pages = new Map<number, Promise<Page>>();
  async function load(width: number): Promise<Page> {
    const page = await browser.newPage({ ignoreHTTPSErrors: true, viewport: { width, height: 900 } });
    await page.goto(`${base}/api/docs`, { waitUntil: 'load', timeout: 30_000 });
    await page.locator('.swagger-ui .info .title').waitFor({ timeout: 30_000 });
    await page.locator('.swagger-ui .info table').first().waitFor();
    return page;
  }
  function open(width: number): Promise<Page> {
    if (!pages.has(width)) pages.set(width, load(width));
    return pages.get(width)!;
  }

  it('shows the panelctl mark in the top bar', async () => {
    const page = await open(1280);
    const logo = page.locator('.swagger-ui .topbar a img');
    await logo.waitFor({ timeout: 20_000 });
    const { src, loaded, width } = await logo.evaluate((element) => {
      const img = element as unknown as PageElement;
      return { src: img.src, loaded: img.complete && img.naturalWidth > 0, width: img.getBoundingClientRect().width };
    });
    expect(loaded).toBe(true);
    expect(width).toBeGreaterThan(100);
    expect(src.startsWith('data:image/svg+xml;base64,')).toBe(true);
    const svg = Buffer.from(src.slice(src.indexOf(',') + 1), 'base64').toString('utf8');
    expect(svg).toContain('>panelctl</text>');
    expect(svg.toLowerCase()).not.toContain('fastify');
    // The bar as a user sees it: the mark is drawn (not a broken image) where fastify's was.
    const bar = await page.locator('.swagger-ui .topbar').screenshot();
    await writeFile(join(shots, 'topbar.png'), bar);
    expect(pngSize(bar).width).toBe(1280);
    const mark = await logo.screenshot();
    await writeFile(join(shots, 'logo.png'), mark);
    expect(pngSize(mark).width).toBeGreaterThan(100);
  }, 60_000);

  for (const width of [1280, 640]) {
    it(`keeps every chip of the error table whole and in its column at ${width} px`, async () => {
      const page = await open(width);
      const table = page.locator('.swagger-ui .info table').first();
      await table.scrollIntoViewIfNeeded();
      const cells = await table.locator('tbody td').evaluateAll((elements) =>
        (elements as unknown as PageElement[]).flatMap((td) => {
          const box = td.getBoundingClientRect();
          return Array.from(td.querySelectorAll('code')).map((code) => {
            const rects = code.getClientRects();
            const chip = code.getBoundingClientRect();
            return { text: code.textContent, lines: rects.length, inside: chip.left >= box.left - 0.5 && chip.right <= box.right + 0.5 && chip.top >= box.top - 0.5 && chip.bottom <= box.bottom + 0.5 };
          });
        }),
      );
      expect(cells.length).toBeGreaterThan(15);
      expect(cells.filter((c) => c.lines !== 1 || !c.inside)).toEqual([]);
      const shot = await table.screenshot();
      await writeFile(join(shots, `error-table-${width}.png`), shot);
      expect(pngSize(shot).width).toBeLessThanOrEqual(width);
      }, 60_000);
  }

  it('shows no raw backticks in operation summaries', async () => {
    const page = await open(1280);
    await page.locator('.opblock-summary-description').first().waitFor();
    const summaries = await page.locator('.opblock-summary-description').allTextContents();
    expect(summaries.length).toBeGreaterThan(20);
    expect(summaries.filter((s) => s.includes('`'))).toEqual([]);
    // The one that had the most of them reads as text.
    expect(summaries).toContain("The caller's endpoints (admins: user_id for a user's, all for everyone's), a page at a time");
  }, 60_000);
});
