// Live updates never move rows under a reader who has scrolled: the fresh page waits behind
// a "New data" button. Times are relative, with the absolute time on hover and tap, in UTC
// or — at the reader's choice, remembered — in the browser's zone.
import { test, expect } from '../harness/fixtures.js';

const updates = (page) => page.evaluate(() => Number(document.body.getAttribute('data-live-updates') || 0));

test('a reader who has scrolled keeps their rows until they ask for new data', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 500 });
  await page.goto('/');
  await expect(page.locator('#live-status')).toHaveText('Live');
  // At the top, the demo's changes are applied as they come.
  await expect.poll(() => updates(page), { timeout: 30_000 }).toBeGreaterThan(0);
  await page.evaluate(() => window.scrollTo(0, 400));
  const before = await updates(page);
  await expect(page.getByTestId('live-update')).toBeVisible({ timeout: 30_000 });
  expect(await updates(page)).toBe(before);
  expect(await page.evaluate(() => window.scrollY)).toBe(400);
  await page.getByTestId('live-update').click();
  await expect(page.getByTestId('live-update')).toHaveCount(0);
  await expect.poll(() => updates(page)).toBe(before + 1);
});

test.describe('in Tokyo', () => {
  test.use({ timezoneId: 'Asia/Tokyo', locale: 'en-US' });

  test('absolute times switch between UTC and the local zone', async ({ page }) => {
    await page.goto('/certificates');
    const time = page.locator('main time[datetime]').first();
    await expect(time).toHaveAttribute('title', /UTC$/);
    const zone = page.getByTestId('time-zone');
    await expect(zone).toHaveText('Times: UTC');
    await zone.click();
    await expect(zone).toHaveText('Times: local');
    await expect(time).toHaveAttribute('title', /GMT\+9/);
    // Remembered on the next page.
    await page.goto('/challenges');
    await expect(page.getByTestId('time-zone')).toHaveText('Times: local');
    await expect(page.locator('time[datetime]').first()).toHaveAttribute('title', /GMT\+9/);
    await page.getByTestId('time-zone').click();
    await expect(page.locator('time[datetime]').first()).toHaveAttribute('title', /UTC$/);
  });
});
