// gva-prod's Gateway-served tenant: Cilium leaves the API listener of Hooli's Gateway out,
// because its certificate is the platform's, in another namespace, with no ReferenceGrant.
// The board names that as the root with the grant to create; the Gateway's listeners say
// what the controller said; creating the grant with kubectl, as the platform team would,
// clears it.
import { execFileSync } from 'node:child_process';
import { test, expect, accessible, finalState } from '../harness/fixtures.js';

const kubectl = (demo, args, input) =>
  execFileSync('kubectl', ['--kubeconfig', demo.kubeconfig, '--context', 'gva-prod', ...args], {
    input,
    encoding: 'utf8',
  });

test('a certificate of another namespace needs a ReferenceGrant, and the grant clears it', async ({ page, demo }) => {
  await page.goto('/?cluster=gva-prod');
  const problem = page.locator('ol.problems > li', { hasText: 'another namespace without a ReferenceGrant' });
  await expect(problem).toHaveCount(1);
  await expect(problem).toContainText('Listener https-api of Gateway edge may not use Secret api-hooli-tls');
  await problem.getByRole('link', { name: 'Open Gateway edge' }).click();
  await expect(page).toHaveURL(/\/gateways\?cluster=gva-prod&namespace=hooli-gateway&q=edge/);
  const api = page.getByTestId('gateway-row').filter({ hasText: 'api.hooli.example' });
  await expect(api).toContainText('RefNotPermitted');
  // The other listener's Secret is missing: a problem of its own.
  await expect(page.getByTestId('gateway-row').filter({ hasText: 'docs.hooli.example' })).toContainText('InvalidCertificateRef');
  await accessible(page);

  kubectl(demo, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'hooli-gateway', namespace: 'platform-certs' },
    spec: {
      from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'hooli-gateway' }],
      to: [{ group: '', kind: 'Secret', name: 'api-hooli-tls' }],
    },
  }));
  // Accepted and resolved; programmed once the Gateway has an address (the demo's has none).
  await expect(async () => {
    await page.reload();
    await expect(api).toContainText('Accepted True, ResolvedRefs True', { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  await page.goto('/?cluster=gva-prod');
  await expect(page.locator('ol.problems > li', { hasText: 'another namespace without a ReferenceGrant' })).toHaveCount(0);
  await finalState(page, 'gateway-granted');
});
