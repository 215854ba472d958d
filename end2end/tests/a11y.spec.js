// Every page of the demo: axe-core finds no serious or critical violation in light and dark
// mode, and nothing scrolls sideways at a phone's width (390 px).
import { test, expect, accessible } from '../harness/fixtures.js';

const pages = [
  '/', '/findings', '/clusters', '/ingresses', '/ingresses/zrh-prod/acme-shop/shop', '/certificates',
  '/certificates/zrh-prod/acme-shop/shop-tls', '/challenges', '/rate-limits', '/rate-limits/forecast', '/audit',
  '/search?q=shop', '/search', '/actions', '/no-such-page',
];

for (const colorScheme of ['light', 'dark']) {
  test(`every page passes axe-core (${colorScheme})`, async ({ page }) => {
    await page.emulateMedia({ colorScheme });
    for (const path of pages) {
      await page.goto(path);
      await expect(page.locator('main')).toBeVisible();
      await accessible(page);
    }
  });
}

test('no page scrolls sideways at 390 px', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 800 });
  for (const path of pages) {
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
  }
});
