// Bulk fix with preview: every Ingress of a cluster that lacks the annotation, previewed
// item by item, then run with per-item outcomes and progress.
import { test, expect, finalState, accessible } from '../harness/fixtures.js';
import { ActionPage } from '../pages/action.js';

test('bulk edit-in-place over a cluster', async ({ page }) => {
  await expect(async () => {
    await page.goto('/ingresses?cluster=gva-prod&status=missing');
    await expect(page.getByTestId('ingress-row')).not.toHaveCount(0, { timeout: 2_000 });
  }).toPass();
  await page.getByTestId('preview-bulk-edit-in-place').click();
  const action = new ActionPage(page);
  await expect(action.banner).toContainText('Preview (dry run)');
  // The preview judges its items in the background; its summary says when it is done.
  await expect(action.summary).toContainText('Preview:', { timeout: 20_000 });
  await expect(action.items).not.toHaveCount(0);
  const planned = await action.items.count();
  for (const item of await action.items.all()) {
    await expect(item).toContainText('gva-prod');
    await expect(item).toContainText('ok');
  }
  // What the fix cannot help yet is left alone, with why, and not counted.
  const skipped = page.getByTestId('bulk-skipped');
  const left = await skipped.count();
  for (const item of await skipped.all()) {
    await expect(item).toContainText('gva-prod');
    await expect(item).not.toBeEmpty();
  }
  await expect(action.apply('bulk-edit-in-place')).toHaveText(`Apply to ${planned} item${planned === 1 ? '' : 's'}`);
  await accessible(page);
  await action.apply('bulk-edit-in-place').click();
  await expect(action.progress).toBeVisible();
  await expect(action.summary).toContainText(`${planned} of ${planned} items ok`);
  await expect(action.items).toHaveCount(planned);
  await page.goto('/ingresses?cluster=gva-prod&status=missing');
  await expect(page.getByTestId('ingress-row')).toHaveCount(left);
  await finalState(page, 'bulk');
});
