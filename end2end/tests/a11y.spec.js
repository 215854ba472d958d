// Every page of the demo (action pages included): axe-core finds no serious or critical violation in light and dark
// mode, and nothing scrolls sideways at a phone's width (390 px).
import { test, expect, accessible } from '../harness/fixtures.js';

const pages = [
  '/', '/findings', '/clusters', '/ingresses', '/ingresses/zrh-prod/acme-shop/shop', '/certificates',
  '/certificates/zrh-prod/acme-shop/shop-tls', '/issuers', '/issuers/zrh-prod/_/letsencrypt-bulk', '/challenges',
  '/gateways', '/gateways/gva-prod/hooli-gateway/edge', '/policies', '/policies/gva-prod/platform/edit-in-place', '/ingresses/gva-prod/umbrella-web/www',
  '/rate-limits', '/rate-limits/forecast', '/audit',
  '/search?q=shop', '/search', '/actions', '/no-such-page',
];

/// The pages above, and two action pages made on the way: the fix's preview (its steps
/// and diffs) and a renew's preview (its budget table).
async function everyPage(page) {
  const actions = [];
  await page.goto('/ingresses/zrh-prod/acme-shop/shop');
  await page.getByTestId('preview-edit-in-place').first().click();
  await expect(page.getByTestId('action-banner')).toBeVisible();
  actions.push(new URL(page.url()).pathname);
  await page.goto('/certificates/zrh-prod/acme-shop/api-tls');
  await page.getByTestId('preview-renew').first().click();
  await expect(page.getByTestId('action-banner')).toBeVisible();
  actions.push(new URL(page.url()).pathname);
  return [...pages, ...actions];
}

for (const colorScheme of ['light', 'dark']) {
  test(`every page passes axe-core (${colorScheme})`, async ({ page }) => {
    await page.emulateMedia({ colorScheme });
    for (const path of await everyPage(page)) {
      await page.goto(path);
      await expect(page.locator('main')).toBeVisible();
      await accessible(page);
    }
  });
}

test('no page scrolls sideways at 390 px', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 800 });
  for (const path of await everyPage(page)) {
    await page.goto(path);
    await expect(page.locator('main')).toBeVisible();
    // Open every folded part too: what is inside must fit when shown.
    await page.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
    const overflow = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll('main *, header *')]
        .filter((e) => e.getBoundingClientRect().right > width + 1)
        .slice(0, 3)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
      return { scroll: document.documentElement.scrollWidth, width, wide };
    });
    expect(overflow.scroll, `${path} is ${overflow.scroll}px wide: ${overflow.wide.join(', ')}`).toBeLessThanOrEqual(overflow.width);
    // Tables become cards at this width and their header row is hidden: each cell keeps
    // its column's name.
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('table:has(thead) tbody td:not([data-label]):not([colspan])')]
      .slice(0, 3).map((td) => td.textContent.trim().slice(0, 40)));
    expect(unlabelled, `${path}: cells without their column's name`).toEqual([]);
  }
});
