// Renew a rate-limited Certificate: the promo Certificate has used its 5 issuances per exact
// set and Let's Encrypt refuses it. Renewing now would only fail again, so its page offers no
// renew button but says why and what to fix first; a preview asked for anyway (a bookmarked
// form, the API) is refused with the reason, shows the budget it exceeds, and offers no Apply.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { ActionPage } from '../pages/action.js';

test('renew of a rate-limited certificate is refused with the reason and no Apply', async ({ page }) => {
  const action = new ActionPage(page);
  await expect(async () => {
    await page.goto('/certificates/zrh-prod/globex-web/promo-tls');
    await expect(page.getByTestId('not-offered')).toContainText('would fail the same way', { timeout: 2_000 });
  }).toPass();
  await expect(page.getByTestId('preview-renew')).toHaveCount(0);
  await expect(page.getByTestId('why').first()).toContainText('rate limit');
  // The same form, posted anyway (as a bookmarked or older page would).
  await page.goto('/certificates/zrh-prod/acme-shop/api-tls');
  await page.evaluate(() => {
    const form = document.querySelector('form.action');
    form.querySelector('input[name="namespace"]').value = 'globex-web';
    form.querySelector('input[name="name"]').value = 'promo-tls';
    form.submit();
  });
  await expect(action.budget.filter({ hasText: 'exceeds' })).toBeVisible();
  await expect(action.budget.filter({ hasText: 'exceeds' })).toContainText('promo.globex.example');
  await expect(action.summary).toContainText('would fail the same way');
  await expect(action.summary).toContainText('rate limit');
  await expect(page.getByTestId('next-actions')).toHaveCount(0);
  await accessible(page);
  await finalState(page, 'renew');
});
