// The issuers as a list of their own: from the nav to the issuer whose ACME account is out
// of new orders, ready as it is, and on its page the limit said first.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';

for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
  test(`the issuer list leads to an account at its limit (${viewport.width} px)`, async ({ page }) => {
    await page.setViewportSize(viewport);
    await page.goto('/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Issuers' }).click();
    await expect(page).toHaveURL(/\/issuers$/);
    const bulk = page.locator('[data-testid="issuer-row"][data-name="letsencrypt-bulk"]');
    await expect(async () => {
      await page.reload();
      await expect(bulk.getByTestId('account-limit')).toBeVisible({ timeout: 2_000 });
    }).toPass({ timeout: 60_000 });
    await expect(bulk).toContainText('ready');
    await expect(bulk.getByTestId('account-limit')).toContainText('new orders used up');
    // A missing issuer that a Certificate names is listed too.
    await expect(page.locator('[data-testid="issuer-row"][data-name="letsencrypt-prd"]')).toContainText('does not exist');
    await accessible(page);
    await bulk.getByRole('link', { name: /letsencrypt-bulk/ }).click();
    await expect(page.getByTestId('issuer-account-limit')).toContainText('new orders per account');
    await expect(page.getByTestId('issuer-account').first()).toBeVisible();
    await accessible(page);
    // Search finds issuers too.
    await page.goto('/search?q=letsencrypt-bulk');
    await expect(page.getByTestId('search-issuer')).toHaveCount(1);
    await finalState(page, `issuers-${viewport.width}`);
  });
}
