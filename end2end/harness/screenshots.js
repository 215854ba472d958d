// The screenshots of docs/screenshots/, taken from a running demo: the main pages in light
// mode, the board and the chain view also dark and at a phone's width, the fix previewed and
// applied, and a customer's view. Used by `scripts/screenshots.sh` (writing into docs/) and
// by tests/screenshots.spec.js (writing into the test's output, so the script stays working).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

// [file, path, colour scheme, viewport]
const PAGES = [
  ['board', '/', 'light', DESKTOP],
  ['board-dark', '/', 'dark', DESKTOP],
  ['board-phone', '/', 'light', PHONE],
  ['ingresses', '/ingresses', 'light', DESKTOP],
  ['ingress-detail', '/ingresses/zrh-prod/acme-shop/shop', 'light', DESKTOP],
  ['ingress-detail-dark', '/ingresses/zrh-prod/acme-shop/shop', 'dark', DESKTOP],
  ['ingress-detail-phone', '/ingresses/zrh-prod/acme-shop/shop', 'dark', PHONE],
  ['certificates', '/certificates', 'light', DESKTOP],
  ['certificate-detail', '/certificates/zrh-prod/acme-shop/shop-tls', 'light', DESKTOP],
  ['issuers', '/issuers', 'light', DESKTOP],
  ['challenges', '/challenges', 'light', DESKTOP],
  ['rate-limits', '/rate-limits', 'light', DESKTOP],
  ['forecast', '/rate-limits/forecast', 'light', DESKTOP],
  ['clusters', '/clusters', 'light', DESKTOP],
  ['search', '/search?q=shop.acme.example', 'light', DESKTOP],
  ['audit', '/audit', 'light', DESKTOP],
  ['gateways', '/gateways', 'light', DESKTOP],
  ['gateway-detail', '/gateways/gva-prod/hooli-gateway/edge', 'light', DESKTOP],
  ['gateway-fix', '/certificates/gva-prod/hooli-gateway/status-hooli-tls', 'light', DESKTOP],
  ['policies', '/policies', 'light', DESKTOP],
];

/// Waits until the demo's flagship problem (shop.acme.example behind HTTPS enforcement) is
/// on the board: the pages then tell the story the README describes.
async function waitForTheStory(page, base) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    await page.goto(`${base}/`);
    const rows = await page.locator('[data-testid="problem-row"][data-object="zrh-prod/acme-shop/Ingress/shop"][data-cause="ingress.edit-in-place-missing"]').count();
    // ... and the first issuances have settled: nothing is still being confirmed.
    const settling = await page.locator('[data-testid="problem-row"][data-confirming="true"]').count();
    if (rows > 0 && settling === 0) return;
    if (Date.now() > deadline) throw new Error('the demo never showed the shop.acme.example problem');
    await page.waitForTimeout(1000);
  }
}

/// Takes every screenshot into `dir`; returns the files written.
export async function takeScreenshots(browser, base, dir, log = () => {}) {
  await mkdir(dir, { recursive: true });
  const written = [];
  const shot = async (page, name) => {
    const file = path.join(dir, `${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    written.push(file);
    log(`${name}.png`);
  };
  const context = async (colorScheme, viewport) =>
    browser.newContext({ colorScheme, viewport, reducedMotion: 'reduce' });

  const first = await context('light', DESKTOP);
  await waitForTheStory(await first.newPage(), base);
  await first.close();
  for (const [name, url, scheme, viewport] of PAGES) {
    const ctx = await context(scheme, viewport);
    const page = await ctx.newPage();
    await page.goto(`${base}${url}`);
    await shot(page, name);
    await ctx.close();
  }
  // The fix: previewed, then applied.
  {
    const ctx = await context('light', DESKTOP);
    const page = await ctx.newPage();
    await page.goto(`${base}/ingresses/zrh-prod/acme-shop/shop`);
    await page.getByTestId('preview-edit-in-place').first().click();
    await page.getByTestId('action-banner').waitFor();
    await shot(page, 'action-preview');
    await page.getByTestId('apply-edit-in-place').click();
    await page.getByTestId('action-banner').filter({ hasText: 'Done' }).waitFor();
    await shot(page, 'action-result');
    await ctx.close();
  }
  // A customer's view: the demo's identity switch.
  {
    const ctx = await context('light', DESKTOP);
    const page = await ctx.newPage();
    await page.goto(`${base}/`);
    const who = page.getByTestId('demo-identity');
    await who.getByRole('combobox').selectOption('customer-acme');
    await who.getByRole('button', { name: 'Switch' }).click();
    await page.goto(`${base}/ingresses`);
    await shot(page, 'customer-ingresses');
    await ctx.close();
  }
  return written;
}
