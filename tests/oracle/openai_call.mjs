// One images.generate call of the official OpenAI client against rgbaqd, with the client's options as
// given (a 2 s timeout, its default 2 retries...), counting the HTTP requests it makes. Prints one JSON
// line: {"attempts", "response"} or {"attempts", "error": {"name", "status", "param", "code", "message"}}.
// Usage: node openai_call.mjs BASE_URL TOKEN CLIENT_OPTIONS_JSON PARAMS_JSON
import OpenAI from 'openai';

const [baseURL, apiKey, clientOptions, params] = process.argv.slice(2);
let attempts = 0;
const client = new OpenAI({
  apiKey, baseURL: `${baseURL}/v1`, ...JSON.parse(clientOptions), logLevel: 'off',
  fetch: (url, init) => { attempts += 1; return fetch(url, init); },
});
try {
  const response = await client.images.generate(JSON.parse(params));
  console.log(JSON.stringify({ attempts, response }));
} catch (e) {
  console.log(JSON.stringify({ attempts, error: { name: e.constructor.name, status: e.status ?? null, param: e.param ?? null,
                                                  code: e.code ?? null, message: e.message } }));
}
