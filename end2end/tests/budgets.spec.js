// Support, from the budgets page to "which clusters will run out in the next 7 days" in at
// most two clicks: the demo's promo certificate has used its exact set up (5 issuances in a
// day), so Let's Encrypt refuses it now, until a token comes back; legacy's name is paused
// for its account, and bulk's account has no new orders left.
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
  // (promo's exact set is used up already: refused now, not only later in the week).
  await expect(notice).toContainText('Let\'s Encrypt refuses certificates now');
  await expect(notice).toContainText('zrh-prod');
  // ... and one click shows which domains, clusters and certificates.
  await notice.getByTestId('forecast-link').click();
  await expect(page).toHaveURL(/\/rate-limits\/forecast$/);
  const short = page.locator('[data-testid="forecast-row"][data-runs-out="true"]');
  await expect(short).not.toHaveCount(0);
  await expect(short.first()).toContainText('globex.example');
  await expect(short.first().getByRole('link', { name: 'zrh-prod', exact: true })).toBeVisible();
  // What Let's Encrypt will refuse this week, and why, from the page alone: the used-up
  // exact set, the name it paused for its account, the account without new orders.
  const refused = page.getByTestId('refused');
  await expect(async () => {
    await page.reload();
    await expect(refused.filter({ hasText: 'promo-tls' })).toContainText('the exact set promo.globex.example is used up', { timeout: 1_000 });
    await expect(refused.filter({ hasText: 'legacy-tls' })).toContainText('paused legacy.globex.example for its account', { timeout: 1_000 });
    await expect(refused.filter({ hasText: 'bulk-tls' })).toContainText('letsencrypt-bulk (zrh-prod) has no new orders left, room again', { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  await accessible(page);
  await finalState(page, 'forecast');
});

// Support: "which namespaces spent most of globex.example's budget?" — two clicks from
// anywhere: the limits in the header, then the registered domain.
test('support finds which namespaces spent most of a registered domain in two clicks', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: "Let's Encrypt limits" }).click();
  const domain = page.getByTestId('budget-key').filter({ hasText: /^globex\.example$/ }).first();
  await expect(domain).toBeVisible();
  await domain.click();
  await expect(page).toHaveURL(/\/rate-limits\?key=globex\.example$/);
  const rows = page.getByTestId('spender-row');
  await expect(rows.first()).toContainText('zrh-prod/globex-web');
  // The most first.
  const counts = (await rows.locator('td').allTextContents()).map(Number);
  expect(counts.length).toBeGreaterThan(0);
  expect([...counts].sort((a, b) => b - a)).toEqual(counts);
  // Every budget row shown is globex.example's.
  for (const key of await page.getByTestId('budget-key').allTextContents()) expect(key).toBe('globex.example');
});
