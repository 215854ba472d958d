// Renew a rate-limited Certificate: the promo Certificate has used its 5 issuances per exact
// set and Let's Encrypt refuses it. Renewing now would only fail again, so the preview says
// so and what to fix first, shows the budget it exceeds, and offers no Apply.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { ActionPage } from '../pages/action.js';

test('renew of a rate-limited certificate is refused with the reason and no Apply', async ({ page }) => {
  const action = new ActionPage(page);
  await expect(async () => {
    await page.goto('/certificates/zrh-prod/globex-web/promo-tls');
    await page.getByTestId('preview-renew').click();
    await expect(action.budget.filter({ hasText: 'exceeds' })).toBeVisible({ timeout: 2_000 });
  }).toPass();
  await expect(action.budget.filter({ hasText: 'exceeds' })).toContainText('promo.globex.example');
  await expect(action.summary).toContainText('would fail the same way');
  await expect(action.summary).toContainText('rate limit');
  await expect(page.getByTestId('next-actions')).toHaveCount(0);
  await accessible(page);
  await finalState(page, 'renew');
});
