// A run of one template in the gallery (issue 41), in a real browser (Debian's chromium, driven by
// playwright-core): the sheet's axes chosen with its selects and kept in the address, each cell where
// its job's choices say (row label, caption); a filter by one choice that survives a reload; the viewer
// showing the template and the choices. Prints one JSON object of what it saw.
// Usage: node template_gallery_check.mjs BASE_URL TOKEN RUN
import { chromium } from 'playwright-core';

const [base, token, run] = process.argv.slice(2);
const seen = { console_errors: [] };
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on('console', (m) => { if (m.type() === 'error') seen.console_errors.push(m.text()); });
  page.on('pageerror', (e) => seen.console_errors.push(String(e)));
  await page.goto(`${base}/?token=${token}`);
  await page.waitForSelector('#runs tbody tr');
  await page.goto(`${base}/?run=${run}`);
  await page.waitForSelector('.cell');

  // What the grid shows: each row's label and its cells' job ids and captions.
  const grid = () => page.evaluate(() => [...document.querySelectorAll('.row-box')]
    .sort((a, b) => Number(a.dataset.row) - Number(b.dataset.row))
    .map((box) => ({ label: box.querySelector('.row-label')?.textContent ?? '',
                     cells: [...box.querySelectorAll('.cell')].map((c) => ({ job: Number(c.dataset.job), caption: c.querySelector('.caption').textContent })) })));
  const query = () => Object.fromEntries(new URL(page.url()).searchParams);

  seen.axis_options = await page.locator('select[aria-label="rows"] option').allTextContents();
  await page.selectOption('select[aria-label="rows"]', '1');
  seen.by_seed = { grid: await grid(), query: query() };
  await page.selectOption('select[aria-label="columns"]', '2');
  seen.by_choices = { grid: await grid(), query: query() };
  await page.reload();
  await page.waitForSelector('.cell');
  seen.after_reload = await grid();

  await page.selectOption('select[aria-label="choice filter"]', '2=owl');
  seen.filtered = { grid: await grid(), query: query() };
  await page.reload();
  await page.waitForSelector('.cell');
  seen.filtered_after_reload = { grid: await grid(), select: await page.locator('select[aria-label="choice filter"]').inputValue() };

  await page.locator('.cell').first().dblclick();
  await page.waitForSelector('#meta dl');
  seen.viewer = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#meta dt')]
    .map((dt) => [dt.textContent, dt.nextElementSibling ? dt.nextElementSibling.textContent : ''])));
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
