import { chromium } from '@playwright/test';
const b = await chromium.launch({ executablePath: '/usr/bin/chromium' });
const paths = process.argv.slice(2);
for (const [w, h] of [[1280, 800], [390, 844]]) {
  const p = await b.newPage({ viewport: { width: w, height: h } });
  await p.goto('http://127.0.0.1:18090/');
  const who = p.getByTestId('demo-identity');
  await who.getByRole('combobox').selectOption('support');
  await who.getByRole('button', { name: 'Switch' }).click();
  for (const [i, path] of paths.entries()) {
    await p.goto('http://127.0.0.1:18090' + path);
    await p.screenshot({ path: `/tmp/shot-${i}-${w}.png`, fullPage: w === 1280 });
  }
  await p.close();
}
await b.close();
