// Search by host: the support engineer's first question.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { Search } from '../pages/search.js';

test('search a host across the fleet', async ({ page }) => {
  await page.goto('/');
  const search = new Search(page);
  await search.for('shop.acme.example');
  await expect(page).toHaveURL(/\/search\?q=shop\.acme\.example/);
  await expect(search.ingresses).not.toHaveCount(0);
  await expect(search.ingresses.first()).toContainText('shop.acme.example');
  await expect(search.certificates.first()).toContainText('shop.acme.example');
  await accessible(page);
  // The host may also be served for a moment by cert-manager's solver Ingress
  // (cm-acme-http-solver-…): open the application's own.
  await search.ingresses.getByRole('link', { name: 'shop', exact: true }).first().click();
  await expect(page).toHaveURL(/\/ingresses\/zrh-prod\/acme-shop\/shop$/);
  await finalState(page, 'search');
});

test('"/" jumps to the search box, and the tab has an icon', async ({ page }) => {
  await page.goto('/ingresses');
  await page.keyboard.press('/');
  await expect(page.locator('#global-search')).toBeFocused();
  await page.keyboard.type('shop.acme.example');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/search\?q=shop\.acme\.example/);
  const icon = await page.request.get('/favicon.svg');
  expect(icon.status()).toBe(200);
  expect(icon.headers()['content-type']).toContain('image/svg+xml');
});
