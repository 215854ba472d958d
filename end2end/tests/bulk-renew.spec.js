// Bulk renew is the single renew many times: on the demo almost every failing Certificate
// fails for a cause a renewal cannot fix (a redirect, an ignored annotation value, a fix not
// yet on the Certificate, Let's Encrypt's limits, an approval policy's denial), so the
// preview leaves each alone with why. The one it offers fails for a reason outside the
// cluster (a firewall that keeps Let's Encrypt's other vantage points out): renewing is how
// one retries once that is fixed, so it is the only item, with its budget — and the test
// applies nothing.
import { test, expect, finalState } from '../harness/fixtures.js';
import { ActionPage } from '../pages/action.js';

// What each of these is left alone for, in the words the single renew uses.
const reasons = {
  'bulk-tls': 'new orders',
  'blog-tls': 'value cert-manager ignores',
  'portal-tls': 'not yet in effect',
  'shop-tls': 'needs edit-in-place',
  'partners-tls': 'approval policy denied',
};
// What a renewal may help: its cause is outside what Lookout sees.
const offered = 'extranet-tls';

for (const js of [true, false]) {
  test(`bulk renew skips what would fail again (JavaScript ${js ? 'on' : 'off'})`, async ({ browser, baseURL }) => {
    test.setTimeout(180_000);
    const context = await browser.newContext({
      baseURL,
      javaScriptEnabled: js,
      viewport: js ? { width: 1280, height: 900 } : { width: 390, height: 844 },
    });
    const page = await context.newPage();
    const action = new ActionPage(page);
    const skipped = page.getByTestId('bulk-skipped');
    // The demo's first minutes: the Certificates fail one after another; once each has
    // failed, the preview leaves every one of them alone.
    await expect(async () => {
      await page.goto('/certificates?status=failing');
      await page.getByTestId('preview-bulk-renew').click();
      await expect(action.banner).toContainText('Preview (dry run)', { timeout: 2_000 });
      // The preview judges its items in the background; its summary says when it is done.
      await expect(async () => {
        if (!js) await page.reload();
        await expect(action.summary).toContainText('Preview:', { timeout: 1_000 });
      }).toPass({ timeout: 20_000 });
      // Each left alone for its cause — once its chain is judged so: a challenge failing
      // cert-manager's self-check reads "issuing already" until what holds it is known.
      for (const [name, why] of Object.entries(reasons)) {
        await expect(skipped.filter({ hasText: name })).toHaveCount(1, { timeout: 1_000 });
        await expect(skipped.filter({ hasText: name })).toContainText(why, { timeout: 1_000 });
      }
      await expect(action.items).toHaveCount(1, { timeout: 1_000 });
      await expect(action.items.first()).toContainText(offered, { timeout: 1_000 });
    }).toPass({ timeout: 120_000 });

    // Whatever else is left alone would fail the same way, or is in flight already (a
    // challenge failing cert-manager's self-check keeps its attempt open: a renew is
    // ignored then).
    for (const row of await skipped.all()) {
      await expect(row).toContainText(/would fail the same way|is issuing it already/);
    }
    for (const [name, why] of Object.entries(reasons)) {
      const row = skipped.filter({ hasText: name });
      await expect(row).toContainText('would fail the same way');
      await expect(row).toContainText(why);
      // Each links to the object it is about, and the link answers.
      const href = await row.getByRole('link').getAttribute('href');
      expect((await page.request.get(href)).status()).toBe(200);
    }
    // One to run: its Apply and its budget (one exact set), and the skipped are not charged.
    await expect(page.getByTestId('bulk-empty')).toHaveCount(0);
    await expect(action.apply('bulk-renew')).toHaveCount(1);
    await expect(action.budget).toContainText('extranet.globex.example');
    // Nothing applied: the audit log holds the preview and no renewal.
    const audit = await (await page.request.get('/api/v1/audit')).json();
    expect(audit.items.filter((i) => i.action === 'renew' || (i.action === 'bulk-renew' && !i.dry_run))).toEqual([]);
    await finalState(page, `bulk-renew-${js ? 'js' : 'nojs'}`);
    await context.close();
  });
}
