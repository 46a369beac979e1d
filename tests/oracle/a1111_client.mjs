// An AUTOMATIC1111-style client in plain HTTP (fetch, HTTP Basic with the token as password, as A1111
// clients send credentials): probes sd-models and options as such clients do, then txt2img; writes each
// image as OUT/a1111-I.png and prints the parsed `info`. Usage: node a1111_client.mjs BASE_URL TOKEN OUT
// PROMPT SEED BATCH WIDTH HEIGHT
import { writeFileSync } from 'node:fs';

const [base, token, out, prompt, seed, batch, width, height] = process.argv.slice(2);
const headers = { Authorization: 'Basic ' + Buffer.from(`user:${token}`).toString('base64'), 'Content-Type': 'application/json' };
for (const probe of ['/sdapi/v1/sd-models', '/sdapi/v1/options']) {
  const r = await fetch(base + probe, { headers });
  if (!r.ok) throw new Error(`${probe}: ${r.status}`);
  await r.json();
}
const r = await fetch(base + '/sdapi/v1/txt2img', {
  method: 'POST', headers,
  body: JSON.stringify({ prompt, seed: Number(seed), batch_size: Number(batch), n_iter: 1, width: Number(width), height: Number(height),
                         negative_prompt: 'blurry', steps: 30, cfg_scale: 7, sampler_name: 'Euler a' }),
});
if (!r.ok) throw new Error(`txt2img: ${r.status} ${await r.text()}`);
const body = await r.json();
body.images.forEach((b64, i) => writeFileSync(`${out}/a1111-${i}.png`, Buffer.from(b64, 'base64')));
console.log(JSON.stringify(JSON.parse(body.info)));
