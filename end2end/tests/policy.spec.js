// gva-prod's platform sets edit-in-place with an Espejote policy whose template has a typo:
// the board tells one problem rooted at the policy (not one per Ingress), its button opens
// the policy with the evaluator's words and the change to make, the Ingress offers its own
// patch only as a stop-gap — and fixing the template in the cluster (with kubectl, as the
// platform team would) clears the problem.
import { execFileSync } from 'node:child_process';
import { test, expect, accessible, finalState } from '../harness/fixtures.js';

const kubectl = (demo, args, input) =>
  execFileSync('kubectl', ['--kubeconfig', demo.kubeconfig, '--context', 'gva-prod', ...args], {
    input,
    encoding: 'utf8',
  });

test('a broken policy is one problem, and repairing it clears it', async ({ page, demo }) => {
  await page.goto('/');
  const who = page.getByTestId('demo-identity');
  await who.getByRole('combobox').selectOption('support');
  await who.getByRole('button', { name: 'Switch' }).click();
  await page.goto('/?cluster=gva-prod');
  const problem = page.locator('ol.problems > li', { hasText: 'Espejote ManagedResource platform/edit-in-place is TemplateError' });
  await expect(problem).toHaveCount(1);
  // One problem for the team's three Ingresses.
  for (const host of ['www.umbrella.example', 'store.umbrella.example', 'careers.umbrella.example']) {
    await expect(problem).toContainText(host);
  }
  await problem.getByRole('link', { name: 'Repair the policy' }).click();
  await expect(page).toHaveURL(/\/policies\/gva-prod\/platform\/edit-in-place$/);
  await expect(page.getByTestId('policy-status')).toHaveText(/TemplateError/);
  await expect(page.getByTestId('policy-fix')).toContainText('Fix the template');
  await expect(page.getByTestId('policy-events')).toContainText('field does not exist: ingress');
  await accessible(page);

  // The Ingress leads to the policy; its own patch is a stop-gap.
  await page.goto('/ingresses/gva-prod/umbrella-web/www');
  await expect(page.getByTestId('repair-policy')).toContainText('is TemplateError');
  // What the stop-gap's preview promises is said inside the fold, not beside the repair.
  const promise = page.getByText('Previewed with a dry run first');
  await expect(promise).toBeHidden();
  await page.getByTestId('stop-gap').locator('summary').click();
  await expect(promise).toBeVisible();
  await expect(page.getByRole('button', { name: 'Preview: add edit-in-place here as a stop-gap' })).toBeVisible();

  // The platform fixes the template in the cluster.
  const template = kubectl(demo, ['-n', 'platform', 'get', 'managedresource', 'edit-in-place', '-o', 'jsonpath={.spec.template}']);
  expect(template).toContain('esp.context().ingress\n');
  const fixed = template.replace('esp.context().ingress\n', 'esp.context().ingresses\n');
  kubectl(demo, ['-n', 'platform', 'patch', 'managedresource', 'edit-in-place', '--type', 'merge', '-p', JSON.stringify({ spec: { template: fixed } })]);
  await expect(async () => {
    await page.goto('/policies/gva-prod/platform/edit-in-place');
    await expect(page.getByTestId('policy-status')).toHaveText(/Ready/, { timeout: 1_000 });
    await expect(page.locator('main')).toContainText('0 lacking', { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  await page.goto('/?cluster=gva-prod');
  await expect(page.locator('ol.problems > li', { hasText: 'Espejote ManagedResource' })).toHaveCount(0);
  // The policy set the annotation, as its own field manager.
  await page.goto('/ingresses/gva-prod/umbrella-web/www');
  await expect(page.getByTestId('annotation-status')).toContainText('set by the Espejote ManagedResource platform/edit-in-place (Ready)');
  await finalState(page, 'policy-repaired');
});
