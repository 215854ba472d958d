// Two Ingresses give shop.acme.example a Secret each; shop's Certificate is never issued
// (its challenge is redirected), and the listener resets the handshake for the host. The
// issued neighbour's page must not call itself healthy while its clients get nothing, and
// what it offers must be what its preview accepts.
import { test, expect } from '../harness/fixtures.js';

test('an issued Certificate whose host serves something else says so, not "Healthy"', async ({ page }) => {
  await page.goto('/');
  const who = page.getByTestId('demo-identity');
  await who.getByRole('combobox').selectOption('support');
  await who.getByRole('button', { name: 'Switch' }).click();
  // The probe sees the host once the neighbour is issued and the demo's stories have failed.
  await expect(async () => {
    await page.goto('/certificates/zrh-prod/acme-shop/shop-api-tls');
    await expect(page.getByTestId('served-else')).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 90_000 });
  await expect(page.getByTestId('healthy')).toHaveCount(0);
  await expect(page.getByTestId('served-else')).toContainText('Clients of shop.acme.example do not get this certificate');
  // Its link leads to everything on the host, where shop's problem is.
  await page.getByTestId('served-else').getByRole('link').click();
  await expect(page).toHaveURL(/\/search\?q=shop\.acme\.example/);
  await expect(page.locator('main')).toContainText('shop');
});
