// Support, from the budgets page to "which clusters will run out in the next 7 days" in at
// most two clicks: the demo's promo certificate has used its exact set up (5 issuances in a
// day), so Let's Encrypt will refuse it until a token comes back.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';

test('support finds the clusters that run out within 7 days from the budgets page', async ({ page }) => {
  await page.goto('/');
  const who = page.getByTestId('demo-identity');
  await who.getByRole('combobox').selectOption('support');
  await who.getByRole('button', { name: 'Switch' }).click();
  await expect(who.getByRole('combobox')).toHaveValue('support');
  await page.goto('/rate-limits');
  // The budgets page says it in one line already ...
  const notice = page.getByTestId('forecast-notice');
  await expect(notice).toContainText('Let\'s Encrypt will refuse certificates in the next 7 days');
  await expect(notice).toContainText('zrh-prod');
  // ... and one click shows which domains, clusters and certificates.
  await notice.getByTestId('forecast-link').click();
  await expect(page).toHaveURL(/\/rate-limits\/forecast$/);
  const short = page.locator('[data-testid="forecast-row"][data-runs-out="true"]');
  await expect(short).not.toHaveCount(0);
  await expect(short.first()).toContainText('globex.example');
  await expect(short.first().getByRole('link', { name: 'zrh-prod', exact: true })).toBeVisible();
  await expect(short.first().getByTestId('refused')).toContainText('promo-tls');
  await accessible(page);
  await finalState(page, 'forecast');
});
