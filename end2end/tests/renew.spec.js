// Renew with the budget warning: the promo Certificate has used its 5 issuances per exact
// set; the preview says so and the run needs the confirmation.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { ActionPage } from '../pages/action.js';

test('renew warns about the exact-set budget and needs confirmation', async ({ page }) => {
  const action = new ActionPage(page);
  await expect(async () => {
    await page.goto('/certificates/zrh-prod/globex-web/promo-tls');
    await page.getByTestId('preview-renew').click();
    await expect(action.budget.filter({ hasText: 'exceeds' })).toBeVisible({ timeout: 2_000 });
  }).toPass();
  await expect(action.budget.filter({ hasText: 'exceeds' })).toContainText('promo.globex.example');
  await expect(action.confirmBudget).toBeVisible();
  await accessible(page);
  // The browser does not submit without the confirmation (the checkbox is required).
  await action.apply('renew').click();
  await expect(action.banner).toContainText('Preview (dry run)');
  await action.confirmBudget.check();
  await action.apply('renew').click();
  await expect(action.banner).toContainText('Done');
  await page.goto('/audit?action=renew');
  await expect(page.getByTestId('audit-row').first()).toContainText('promo-tls');
  await finalState(page, 'renew');
});
