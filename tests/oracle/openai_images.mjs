// The official OpenAI client against rgbaqd's Images API: generates N images and writes each as
// OUT/openai-I.png; prints the response's rgbaq field as JSON. Usage: node openai_images.mjs BASE_URL
// TOKEN OUT PROMPT SEED N SIZE
import OpenAI from 'openai';
import { writeFileSync } from 'node:fs';

const [baseURL, apiKey, out, prompt, seed, n, size] = process.argv.slice(2);
const client = new OpenAI({ apiKey, baseURL: `${baseURL}/v1`, timeout: 600000, maxRetries: 0 });
const models = await client.models.list();
const model = models.data[0].id;
const response = await client.images.generate({ model, prompt, n: Number(n), size, response_format: 'b64_json', seed: Number(seed) });
response.data.forEach((image, i) => writeFileSync(`${out}/openai-${i}.png`, Buffer.from(image.b64_json, 'base64')));
console.log(JSON.stringify({ model, count: response.data.length, rgbaq: response.rgbaq }));
