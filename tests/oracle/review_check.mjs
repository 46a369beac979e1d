// A person reviewing a run with the keyboard alone, in a real browser (Debian's chromium, driven by
// playwright-core): opens the run, steps through every image with the arrow key and stars every
// EVERY-th one. Prints the keystrokes, the images stepped through and the time it took, as JSON.
// Usage: node review_check.mjs BASE_URL TOKEN RUN EVERY
import { chromium } from 'playwright-core';

const [base, token, run, every] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const result = { keystrokes: 0, images: 0, starred: [] };
const errors = [];
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${base}/?token=${token}`);
  await page.goto(`${base}/?run=${run}`);
  await page.waitForSelector('.cell.cursor img');
  const total = Number((await page.locator('.count').textContent()).split(' ')[0]);
  const t0 = Date.now();
  const press = async (key) => { await page.keyboard.press(key); result.keystrokes += 1; };
  for (let i = 0; i < total; ++i) {
    if (i % Number(every) === 0) {
      result.starred.push(Number(await page.locator('.cell.cursor').getAttribute('data-job')));
      await press('s');
    }
    result.images += 1;
    if (i + 1 < total) await press('ArrowRight');
  }
  result.seconds = (Date.now() - t0) / 1000;  // the keys; the queue may still be taking the last marks
  // Keep the page (its requests in flight) until the queue holds every mark, or a minute has passed.
  for (let i = 0; i < 600; ++i) {
    const r = await fetch(`${base}/api/v1/jobs?marked=star&limit=1000`, { headers: { Authorization: `Bearer ${token}` } });
    if ((await r.json()).jobs.length >= result.starred.length) break;
    await page.waitForTimeout(100);
  }
  result.seconds_until_stored = (Date.now() - t0) / 1000;
  result.keystrokes_per_image = result.keystrokes / result.images;
} finally {
  await browser.close();
}
result.errors = errors;
console.log(JSON.stringify(result));
