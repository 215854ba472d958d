// Regenerates docs/screenshots/ from a fresh `lookout demo`: `bash scripts/screenshots.sh`.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';
import { startDemo } from './harness/demo.js';
import { takeScreenshots } from './harness/screenshots.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2] ?? path.join(root, 'docs/screenshots');
const demo = await startDemo();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const files = await takeScreenshots(browser, demo.url, out, (f) => console.log(`  ${f}`));
  console.log(`${files.length} screenshots in ${out}`);
} finally {
  await browser.close();
  await demo.stop();
}
