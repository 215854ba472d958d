// Browser journeys against `lookout demo` (kubesim and lookout on free ports, a fresh
// database each), in Debian's Chromium: no browser is downloaded.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  // Each spec starts its own demo; one at a time keeps the 2-core machine responsive.
  workers: 1,
  fullyParallel: false,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  reporter: [['list']],
  outputDir: 'test-results/artifacts',
  use: {
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    },
    viewport: { width: 1280, height: 900 },
    trace: 'off',
    screenshot: 'only-on-failure',
  },
});
