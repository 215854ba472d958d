// The screenshot script keeps working: it takes every screenshot of docs/screenshots/ from
// the demo (into this test's output directory, not the docs).
import { readFile } from 'node:fs/promises';
import { test, expect } from '../harness/fixtures.js';
import { takeScreenshots } from '../harness/screenshots.js';

test('the screenshots of docs/ can be regenerated from the demo', async ({ browser, baseURL }, testInfo) => {
  test.setTimeout(240_000);
  const files = await takeScreenshots(browser, baseURL, testInfo.outputPath('screenshots'));
  expect(files.length).toBe(23);
  for (const file of files) {
    const png = await readFile(file);
    expect(png.subarray(1, 4).toString(), file).toBe('PNG');
    expect(png.length, file).toBeGreaterThan(10_000);
  }
});
