// An asset export's atlas as PixiJS reads it, in a real Chromium (Debian's, driven by playwright-core):
// a local server gives the page PixiJS (npm pixi.js) and the export folder's files; the page loads
// ATLAS_JSON with Assets.load (PixiJS's Spritesheet, which follows meta.related_multi_packs to the other
// pages), draws each frame's texture as a Sprite (trimmed frames at their place in the untrimmed
// source) into a render texture of the frame's source size, and reads its pixels back. Prints one JSON
// object: {"renderer", "sheets": [{"image", "frames"}], "frames": {NAME: {"width", "height", "trim":
// [x, y, w, h], "pixels": base64 RGBA as read back (premultiplied, as a WebGL target holds them)}},
// "console_errors", "foreign_requests"}.
// Usage: node atlas_check.mjs EXPORT_DIR ATLAS_JSON
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const [dir, atlasJson] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const pixi = readFileSync(join(here, 'node_modules/pixi.js/dist/pixi.min.mjs'));
const types = { png: 'image/png', webp: 'image/webp', json: 'application/json' };
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/') {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    return res.end('<!doctype html><script type="module">import * as PIXI from "/pixi.mjs"; window.PIXI = PIXI;</script>');
  }
  if (path === '/pixi.mjs') {
    res.writeHead(200, { 'Content-Type': 'text/javascript' });
    return res.end(pixi);
  }
  if (path === '/favicon.ico') { res.writeHead(204); return res.end(); }  // the browser asks; none is needed
  const name = path.startsWith('/assets/') ? path.slice('/assets/'.length) : '';
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) { res.writeHead(404); return res.end(); }
  try {
    const body = readFileSync(join(dir, name));
    res.writeHead(200, { 'Content-Type': types[name.split('.').pop()] || 'application/octet-stream' });
    res.end(body);
  } catch { res.writeHead(404); res.end(); }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const seen = { console_errors: [], foreign_requests: [] };
try {
  const page = await browser.newPage();
  page.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) seen.foreign_requests.push(r.url()); });
  page.on('console', (m) => { if (m.type() === 'error') seen.console_errors.push(m.text()); });
  page.on('pageerror', (e) => seen.console_errors.push(String(e)));
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => window.PIXI !== undefined);
  Object.assign(seen, await page.evaluate(async (atlasJson) => {
    const { Application, Assets, Sprite, RenderTexture } = window.PIXI;
    const app = new Application();
    await app.init({ width: 8, height: 8, preference: 'webgl', backgroundAlpha: 0, antialias: false });
    const sheet = await Assets.load(`/assets/${atlasJson}`);
    const sheets = [sheet, ...(sheet.linkedSheets || [])];
    const frames = {};
    const toBase64 = (bytes) => {
      let s = '';
      for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(s);
    };
    for (const s of sheets) {
      for (const [name, texture] of Object.entries(s.textures)) {
        const target = RenderTexture.create({ width: texture.orig.width, height: texture.orig.height });
        app.renderer.render({ container: new Sprite(texture), target, clear: true, clearColor: [0, 0, 0, 0] });
        const { pixels, width, height } = app.renderer.extract.pixels(target);
        const trim = texture.trim ? [texture.trim.x, texture.trim.y, texture.trim.width, texture.trim.height] : null;
        frames[name] = { width, height, trim, pixels: toBase64(new Uint8Array(pixels.buffer, pixels.byteOffset, pixels.length)) };
        target.destroy(true);
      }
    }
    return { renderer: app.renderer.name, sheets: sheets.map((s) => ({ image: s.data.meta.image, frames: Object.keys(s.textures).length })), frames };
  }, atlasJson));
} finally {
  await browser.close();
  server.close();
}
process.stdout.write(JSON.stringify(seen) + '\n');
