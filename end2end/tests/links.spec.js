// Every table row that names an object links to it: the rows people scan to find what to
// open are never dead text.
import { test, expect } from '../harness/fixtures.js';

const lists = [
  ['/', ['problem-row', 'recent-row']],
  ['/findings', ['finding-row']],
  ['/ingresses', ['ingress-row']],
  ['/certificates', ['certificate-row']],
  ['/challenges', ['challenge-row']],
  ['/rate-limits', ['budget-row']],
  ['/rate-limits/forecast', ['forecast-row']],
  ['/search?q=acme', ['search-ingress', 'search-certificate']],
];

test('every row that names an object links to it', async ({ page }) => {
  for (const [path, testIds] of lists) {
    await page.goto(path);
    for (const id of testIds) {
      const rows = page.getByTestId(id);
      const found = await rows.evaluateAll((rs) =>
        rs.map((r) => ({ links: r.querySelectorAll('a[href]').length, text: r.innerText.replace(/\s+/g, ' ').trim() })),
      );
      expect(found.length, `${path} has ${id} rows`).toBeGreaterThan(0);
      // The rows that link nowhere, by their text, so that a failure says which.
      const dead = found.filter((r) => r.links === 0).map((r) => r.text);
      expect(dead, `${path}: ${id} rows that link nowhere`).toEqual([]);
    }
  }
});

test('each list offers itself as JSON with the same filters, and commands have a copy button', async ({ page }) => {
  await page.goto('/ingresses?namespace=acme-shop');
  const href = await page.getByTestId('as-json').getAttribute('href');
  expect(href).toBe('/api/v1/ingresses?namespace=acme-shop');
  // The same filter applied (the demo keeps changing, so not the same count to the row).
  const json = await (await page.request.get(href)).json();
  expect(json.total).toBeGreaterThan(0);
  for (const item of json.items) expect(item.namespace).toBe('acme-shop');
  const csvHref = await page.getByTestId('as-csv').getAttribute('href');
  expect(csvHref).toBe('/api/v1/ingresses.csv?namespace=acme-shop');
  const csv = await page.request.get(csvHref);
  expect(csv.headers()['content-type']).toBe('text/csv; charset=utf-8');
  const [header, ...lines] = (await csv.text()).trim().split('\n');
  expect(header.split(',').slice(0, 3)).toEqual(['cluster', 'namespace', 'name']);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line.split(',')[1]).toBe('acme-shop');
  // Every list offers both.
  for (const path of ['/', '/findings', '/certificates', '/challenges', '/rate-limits', '/rate-limits/forecast', '/audit']) {
    await page.goto(path);
    await expect(page.getByTestId('as-csv'), path).toHaveCount(1);
    await expect(page.getByTestId('as-json'), path).toHaveCount(1);
  }
  await page.goto('/ingresses/zrh-prod/acme-shop/shop');
  // The commands are folded under the diagnosis and the fix.
  await page.locator('summary', { hasText: 'By hand, with kubectl' }).first().click();
  await expect(page.getByTestId('copy').first()).toBeVisible();
  // The explanation links the upstream issue it cites and the rule's upstream docs.
  await expect(page.locator('main a.upstream[href^="https://github.com/cilium/cilium/issues/"]').first()).toBeAttached();
  await expect(page.getByTestId('rule-docs').first()).toHaveAttribute('href', /^https:\/\/cert-manager\.io\/docs\//);
});

test('each bar of the expiry chart lists its certificates', async ({ page }) => {
  await page.goto('/certificates');
  const bars = page.getByTestId('expiry-bar');
  await expect(bars).toHaveCount(14);
  const never = page.locator('[data-testid="expiry-bar"][data-window="never"]');
  expect(Number(await never.locator('.count').textContent())).toBeGreaterThan(0);
  await never.click();
  await expect(page).toHaveURL(/\/certificates\?expires=never$/);
  await expect(page.getByTestId('expiry-filter')).toContainText('never issued');
  // The chart keeps every bar, the chosen one marked.
  await expect(page.getByTestId('expiry-bar')).toHaveCount(14);
  await expect(page.locator('[data-testid="expiry-bar"][aria-current="true"]')).toHaveAttribute('data-window', 'never');
  const expires = await page.getByTestId('certificate-row').locator('td:nth-child(6)').allTextContents();
  expect(expires.length).toBeGreaterThan(0);
  for (const e of expires) expect(e.trim()).toBe('');
});

// Support exports the rollout of the fix — every Ingress that still needs it, whatever the
// reason (missing, invalid, not in effect) — in one CSV, two clicks from anywhere.
test('the rollout of the fix exports in one CSV', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Ingresses' }).click();
  const href = await page.getByTestId('needs-fix-csv').getAttribute('href');
  expect(href).toBe('/api/v1/ingresses.csv?status=missing%2Cinvalid%2Cset-not-effective');
  const csv = await page.request.get(href);
  expect(csv.status()).toBe(200);
  const [header, ...lines] = (await csv.text()).trim().split('\n');
  const status = header.split(',').indexOf('annotation.status');
  expect(status, header).toBeGreaterThan(-1);
  const seen = new Set(lines.map((l) => l.split(',')[status]));
  expect([...seen].every((s) => ['missing', 'invalid', 'set-not-effective'].includes(s)), [...seen].join(' ')).toBe(true);
  expect(seen.has('missing')).toBe(true);
  expect(seen.has('invalid')).toBe(true);
});
