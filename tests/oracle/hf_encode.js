// The HF tokenizers library as an oracle: reads one JSON string per line on stdin and prints one JSON
// array of ids per line (encode with addSpecialTokens = false, as the pipeline's processor calls it).
// usage: node hf_encode.js TOKENIZER_JSON [--time | --time-batch]
//   --time: print the seconds spent in encode() calls to stderr; --time-batch: encode the whole input
//   with one encodeBatch() call (set RAYON_NUM_THREADS=1 for one thread) and print its seconds.
'use strict';
const { Tokenizer } = require('@anush008/tokenizers');
const fs = require('fs');

async function main() {
  const [file, flag] = process.argv.slice(2);
  const tk = Tokenizer.fromFile(file);
  const lines = fs.readFileSync(0, 'utf8').split('\n').filter((l) => l.length > 0);
  const texts = lines.map((l) => JSON.parse(l));
  let out = new Array(texts.length);
  const start = process.hrtime.bigint();
  if (flag === '--time-batch') {
    out = (await tk.encodeBatch(texts, { addSpecialTokens: false })).map((e) => e.getIds());
  } else {
    for (let i = 0; i < texts.length; i++) {
      const enc = await tk.encode(texts[i], null, { addSpecialTokens: false });
      out[i] = enc.getIds();
    }
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (flag) process.stderr.write(`${seconds}\n`);
  process.stdout.write(out.map((ids) => JSON.stringify(Array.from(ids))).join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
