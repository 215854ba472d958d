// Two Ingresses give docs.globex.example a Secret each on Cilium's shared listener, which
// Envoy refuses: the listener serves docs' and takes no more changes. The issued neighbour's
// page must not call itself healthy: it tells the host's problem, as its list row does.
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
    await page.goto('/certificates/zrh-prod/globex-web/docs-preview-tls');
    await expect(page.getByTestId('why').first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 90_000 });
  await expect(page.getByTestId('healthy')).toHaveCount(0);
  await expect(page.getByTestId('why').first()).toContainText('docs.globex.example');
  const list = await (await page.request.get('/api/v1/certificates?namespace=globex-web&q=docs-preview-tls')).json();
  const row = list.items.find((r) => r.name === 'docs-preview-tls');
  expect(row.severity, 'the list tells a problem too').not.toBeNull();
  // The problem is the listener's, and says so.
  await expect(page.getByTestId('why').first()).toContainText("Cilium's shared listener");
  // Its host leads to everything on the host.
  await page.goto('/search?q=docs.globex.example');
  await expect(page.locator('main')).toContainText('docs-preview');
});
