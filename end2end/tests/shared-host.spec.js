// Two Ingresses give shop.acme.example a Secret each; shop's Certificate is never issued
// (its challenge is redirected), and the listener resets the handshake for the host. The
// issued neighbour's page must not call itself healthy while its clients get nothing: it
// tells the host's problem, as its list row does.
import { test, expect } from '../harness/fixtures.js';

test('an issued Certificate whose host serves something else says so, not "Healthy"', async ({ page }) => {
  await page.goto('/');
  const who = page.getByTestId('demo-identity');
  await who.getByRole('combobox').selectOption('support');
  await who.getByRole('button', { name: 'Switch' }).click();
  // The probe sees the host once the neighbour is issued and the demo's stories have failed;
  // the problem of the shared host reaches this Certificate's chain, and its page tells it
  // as its list does (the board's judgement), never "Healthy".
  await expect(async () => {
    await page.goto('/certificates/zrh-prod/acme-shop/shop-api-tls');
    await expect(page.getByTestId('why').first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 90_000 });
  await expect(page.getByTestId('healthy')).toHaveCount(0);
  await expect(page.getByTestId('why').first()).toContainText('shop.acme.example');
  const list = await (await page.request.get('/api/v1/certificates?namespace=acme-shop&q=shop-api-tls')).json();
  const row = list.items.find((r) => r.name === 'shop-api-tls');
  expect(row.severity, 'the list tells a problem too').not.toBeNull();
  // Its host's problem leads to everything on the host, where shop's problem is.
  await page.goto('/search?q=shop.acme.example');
  await expect(page.locator('main')).toContainText('shop');
});
