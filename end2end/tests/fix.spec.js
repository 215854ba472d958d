// The fix flow: preview → apply (one plan: the annotation, the Certificate's overrides and
// the renew of the Certificate in backoff) → the finding clears live on a page left open,
// without a reload, and the certificate is issued.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { IngressPage } from '../pages/ingress.js';
import { ActionPage } from '../pages/action.js';

test('fix, apply, and the finding clears live', async ({ page, context }) => {
  const ingress = new IngressPage(page);
  await expect(async () => {
    await ingress.open('zrh-prod', 'acme-shop', 'shop');
    await expect(ingress.finding('ingress.edit-in-place-missing')).toBeAttached({ timeout: 2_000 });
  }).toPass();
  await expect(page.locator('#live-status')).toHaveText('Live');
  // A marker that a reload would wipe.
  await page.evaluate(() => { window.notReloaded = true; });

  const tab = await context.newPage();
  const other = new IngressPage(tab);
  await other.open('zrh-prod', 'acme-shop', 'shop');
  await other.previewFix.click();
  const action = new ActionPage(tab);
  await expect(action.banner).toContainText('Preview (dry run)');
  await expect(action.steps).toHaveCount(3);
  await expect(action.steps.nth(2)).toContainText(/Issuing=True|in-flight CertificateRequest|in-flight ACME Order/);
  await expect(action.steps.first()).toContainText('+ metadata.annotations["acme.cert-manager.io/http01-edit-in-place"]: "true"');
  await accessible(tab);
  await action.apply('edit-in-place').click();
  await expect(action.banner).toContainText('Done');
  await expect(action.summary).toContainText('ok');

  // The page left open updates by itself.
  await expect(ingress.finding('ingress.edit-in-place-missing')).toHaveCount(0);
  await expect(ingress.annotation).toContainText('set (by lookout)');
  expect(await page.evaluate(() => window.notReloaded)).toBe(true);

  // The renew was part of the fix: the certificate is issued without another press.
  await expect(ingress.finding('cert.not-ready')).toHaveCount(0, { timeout: 60_000 });
  await finalState(page, 'fix');
});
