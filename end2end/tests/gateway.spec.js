// gva-prod's Gateway-served tenant: Cilium leaves the API listener of Hooli's Gateway out,
// because its certificate is the platform's, in another namespace, with no ReferenceGrant.
// The board names that as the root with the grant to create; the Gateway's page says what
// the controller said of each listener and which certificate does not name its host;
// creating the grant the page writes, with kubectl as the platform team would, clears it, and adding the
// shop's name to its Certificate clears the other.
import { execFileSync } from 'node:child_process';
import { test, expect, accessible, finalState } from '../harness/fixtures.js';

const kubectl = (demo, args, input) =>
  execFileSync('kubectl', ['--kubeconfig', demo.kubeconfig, '--context', 'gva-prod', ...args], {
    input,
    encoding: 'utf8',
  });

// Lines a page gives, run in bash as written, with kubectl reaching the demo's gva-prod.
const pasted = (demo, script) =>
  execFileSync('bash', ['-euo', 'pipefail', '-c',
    `kubectl() { command kubectl --kubeconfig ${JSON.stringify(demo.kubeconfig)} --context gva-prod "$@"; }\n${script}`], {
    encoding: 'utf8',
  });

test('a certificate of another namespace needs a ReferenceGrant, and the grant clears it', async ({ page, demo }) => {
  await page.goto('/?cluster=gva-prod');
  const problem = page.locator('ol.problems > li', { hasText: 'another namespace without a ReferenceGrant' });
  await expect(problem).toHaveCount(1);
  await expect(problem).toContainText('Listener https-api of Gateway edge may not use Secret platform-certs/api-hooli-tls');
  await problem.getByRole('link', { name: 'Open Gateway edge' }).click();
  // The Gateway's own page: what is wrong first, then each listener to its certificate.
  await expect(page).toHaveURL(/\/gateways\/gva-prod\/hooli-gateway\/edge$/);
  await expect(page.getByTestId('why').filter({ hasText: 'may not use Secret platform-certs/api-hooli-tls' }))
    .toContainText('Create a ReferenceGrant in namespace platform-certs from group gateway.networking.k8s.io, kind Gateway, namespace hooli-gateway to group "", kind Secret, name api-hooli-tls');
  const api = page.getByTestId('listener-row').filter({ hasText: 'api.hooli.example' });
  await expect(api).toContainText('ResolvedRefs False (RefNotPermitted)');
  // The other listener's Secret is missing: a problem of its own.
  await expect(page.getByTestId('listener-row').filter({ hasText: 'docs.hooli.example' })).toContainText('InvalidCertificateRef');
  // The third serves the shop with the certificate issued for www alone.
  await expect(page.getByTestId('listener-row').filter({ hasText: 'shop.hooli.example' }).getByTestId('not-covered'))
    .toContainText('does not name it (names www.hooli.example)');
  await accessible(page);

  // The grant as the page writes it, pasted into a shell as the platform team would.
  const grant = page.getByTestId('why').filter({ hasText: 'may not use Secret platform-certs/api-hooli-tls' }).getByTestId('change');
  await expect(grant).toContainText('kind: ReferenceGrant');
  pasted(demo, await grant.innerText());
  // Accepted and resolved; programmed once the Gateway has an address (the demo's has none).
  await expect(async () => {
    await page.reload();
    await expect(api).not.toContainText('RefNotPermitted', { timeout: 1_000 });
    await expect(api).not.toContainText('Accepted False', { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  // The shop's name added to the Certificate: the listener is covered.
  kubectl(demo, ['-n', 'hooli-gateway', 'patch', 'certificate', 'hooli-www-tls', '--type=merge', '-p',
    JSON.stringify({ spec: { dnsNames: ['www.hooli.example', 'shop.hooli.example'] } })]);
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('not-covered')).toHaveCount(0, { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  await page.goto('/?cluster=gva-prod');
  await expect(page.locator('ol.problems > li', { hasText: 'another namespace without a ReferenceGrant' })).toHaveCount(0);
  await expect(page.locator('ol.problems > li', { hasText: 'not covered by Certificate hooli-www-tls' })).toHaveCount(0);
  await finalState(page, 'gateway-granted');
});

// The Gateway `status`'s certificate is solved by cert-manager's gatewayHTTPRoute solver,
// whose route finds no port-80 listener. No button makes the change (a shared Gateway's
// listeners are its platform's); the page opens it written in full, and the lines, pasted
// into a shell as they are, add the listener: the challenge passes and the certificate is
// issued.
test('a solver route with no port-80 listener gets its listener from the lines the page gives', async ({ page, demo }) => {
  await page.goto('/?cluster=gva-prod');
  const problem = page.locator('ol.problems > li', { hasText: 'status.hooli.example reaches no port-80 listener' });
  await expect(problem).toHaveCount(1);
  await problem.getByRole('link', { name: 'Open Certificate status-hooli-tls' }).click();
  await expect(page).toHaveURL(/\/certificates\/gva-prod\/hooli-gateway\/status-hooli-tls$/);
  const why = page.getByTestId('why');
  await expect(why).toContainText('reaches no port-80 listener');
  // Renewing would fail the same way: not offered. The change is open, in the first screen.
  await expect(why.getByRole('button', { name: /Renew/ })).toHaveCount(0);
  const lines = why.getByTestId('change');
  await expect(lines).toBeVisible();
  await expect(lines).toContainText('kubectl apply --server-side --field-manager=lookout -f - <<\'EOF\'');
  const box = await lines.boundingBox();
  expect(box.y).toBeLessThan(800);
  await accessible(page);

  pasted(demo, await lines.innerText());
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('why')).toHaveCount(0, { timeout: 1_000 });
    await expect(page.locator('main')).toContainText('✓ ready', { timeout: 1_000 });
  }).toPass({ timeout: 90_000 });
  await page.goto('/?cluster=gva-prod');
  await expect(page.locator('ol.problems > li', { hasText: 'status.hooli.example reaches no port-80 listener' })).toHaveCount(0);
  await finalState(page, 'gateway-listener-added');
});
