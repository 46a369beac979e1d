// The gallery's "export assets to…" on a selection, in a real Chromium (Debian's, driven by
// playwright-core), as a person uses it: a click selects each of JOB..., the button asks for a folder
// and the options (both answered here), and a toast says what was written. Prints one JSON object:
// {"prompts", "toast", "console_errors", "foreign_requests"}; throws (exit 1) when the page breaks.
// Usage: node gallery_assets_check.mjs BASE_URL TOKEN RUN FOLDER OPTIONS JOB...
import { chromium } from 'playwright-core';

const [base, token, run, folder, options, ...jobs] = process.argv.slice(2);
const origin = new URL(base).origin;
const seen = { prompts: [], console_errors: [], foreign_requests: [] };
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) seen.foreign_requests.push(r.url()); });
  page.on('console', (m) => { if (m.type() === 'error') seen.console_errors.push(m.text()); });
  page.on('pageerror', (e) => seen.console_errors.push(String(e)));
  const answers = [folder, options];
  page.on('dialog', (d) => { seen.prompts.push(d.message()); d.accept(answers.shift()); });
  await page.goto(`${base}/?token=${token}`);
  await page.waitForSelector('#runs tbody tr');
  await page.goto(`${base}/?run=${run}`);
  await page.waitForSelector('.cell img');
  for (const job of jobs) await page.locator(`.cell[data-job="${job}"]`).click();
  await page.locator('#selection button', { hasText: 'export assets' }).click();
  await page.waitForFunction(() => /exported|not exported/.test(document.getElementById('toast').textContent), null, { timeout: 30000 });
  seen.toast = await page.locator('#toast').textContent();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen) + '\n');
