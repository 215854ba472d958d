// The test fixture every journey uses: a demo of its own, its URL as `baseURL`, a screenshot
// of the final state saved as a file, and axe-core on every page the journey visits.
import { test as base, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { startDemo } from './demo.js';

export const test = base.extend({
  // Extra environment for the demo (a spec sets it with test.use).
  demoEnv: [{}, { option: true }],
  demo: [async ({ demoEnv }, use) => {
    const demo = await startDemo(demoEnv);
    await use(demo);
    await demo.stop();
  }, { scope: 'test' }],
  baseURL: async ({ demo }, use) => use(demo.url),
});

export { expect };

/// Saves the page as the journey's final state: test-results/journeys/NAME.png.
export async function finalState(page, name) {
  await page.screenshot({ path: `test-results/journeys/${name}.png`, fullPage: true });
}

/// Runs axe-core on the current page: no serious or critical violation.
export async function accessible(page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.length} nodes, e.g. ${v.nodes[0]?.target})`), page.url()).toEqual([]);
}
