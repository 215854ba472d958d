// The customer's fix on shop-gva: issued and served on IPv4 while IPv6 gets no answer at all
// (the cluster's PROXY protocol problem, the platform's). The result settles as ready where
// the hosts answer, links the other problem, and stops following.
import { test, expect, finalState } from '../harness/fixtures.js';
import { IngressPage } from '../pages/ingress.js';
import { ActionPage } from '../pages/action.js';

for (const js of [true, false]) {
  test(`a fix that worked settles beside an address that answers nothing (JavaScript ${js ? 'on' : 'off'})`, async ({ browser, baseURL }) => {
    test.setTimeout(180_000);
    const context = await browser.newContext({ baseURL, javaScriptEnabled: js, viewport: js ? { width: 1280, height: 900 } : { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto('/');
    const who = page.getByTestId('demo-identity');
    await who.getByRole('combobox').selectOption('customer-acme');
    await who.getByRole('button', { name: 'Switch' }).click();
    const ingress = new IngressPage(page);
    // The demo's first minutes: the fix is offered once the challenge is seen failing.
    await expect(async () => {
      await ingress.open('gva-prod', 'acme-shop', 'shop-gva');
      await expect(ingress.previewFix).toBeVisible({ timeout: 2_000 });
    }).toPass({ timeout: 60_000 });
    await ingress.previewFix.click();
    const action = new ActionPage(page);
    await expect(action.banner).toContainText('Preview (dry run)');
    await action.apply('edit-in-place').click();
    await expect(action.banner).toContainText('Done');
    // Within a minute (the demo runs 60 times faster): ready where the hosts answer, the
    // silent IPv6 address told apart with a link to its own problem.
    const progress = page.getByTestId('progress');
    await expect(async () => {
      if (!js) await page.reload();
      await expect(progress).toHaveAttribute('data-settled', 'ready', { timeout: 2_000 });
    }).toPass({ timeout: 60_000 });
    const partly = page.getByTestId('settled-partly');
    await expect(partly).toBeVisible();
    await expect(page.getByTestId('progress-headline')).toContainText('No answer at all on shop-gva.acme.example on');
    const other = page.getByTestId('progress-headline').getByRole('link', { name: 'the problem of that address' });
    const href = await other.getAttribute('href');
    expect(href).toBe('/?host=shop-gva.acme.example');
    expect((await page.request.get(href)).status()).toBe(200);
    await finalState(page, `partial-${js ? 'js' : 'nojs'}`);
    await context.close();
  });
}
