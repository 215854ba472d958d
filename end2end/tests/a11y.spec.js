// axe-core on every page of the demo: no serious or critical violation.
import { test, expect, accessible } from '../harness/fixtures.js';

test('every page passes axe-core', async ({ page }) => {
  const pages = [
    '/', '/findings', '/clusters', '/ingresses', '/ingresses/zrh-prod/acme-shop/shop', '/certificates',
    '/certificates/zrh-prod/acme-shop/shop-tls', '/challenges', '/rate-limits', '/audit',
    '/search?q=shop', '/search', '/no-such-page',
  ];
  for (const path of pages) {
    await page.goto(path);
    await expect(page.locator('main')).toBeVisible();
    await accessible(page);
  }
});
