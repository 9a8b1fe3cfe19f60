// The OpenAI features agents need, driven through the official `openai` npm SDK against the
// real `duet serve` (started by run_sdk_test.sh with a generated tiny model that knows
// nothing of JSON). Usage: node sdk_test.mjs BASE_URL DUET_BINARY MODEL_PATH WORK_DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { validate } from './validate.mjs';

const [baseURL, duet, modelPath, workDir] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'tiny';

const weatherParams = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer' },
  },
  required: ['city', 'unit'],
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weatherParams } },
  { type: 'function', function: { name: 'get_time', description: 'Time in a zone',
      parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'] } } },
];
const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('forced tool call with a schema', async () => {
  const r = await client.chat.completions.create({
    model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
    temperature: 1, seed: 3, max_tokens: 250,
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_weather');
  validate(weatherParams, JSON.parse(call.function.arguments));
});

test('tool_choice required picks one of the tools', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required', seed, max_tokens: 250 });
    const call = r.choices[0].message.tool_calls[0];
    const tool = tools.find((t) => t.function.name === call.function.name);
    assert.ok(tool, call.function.name);
    validate(tool.function.parameters, JSON.parse(call.function.arguments));
  }
});

test('tool_choice auto: a model that answers in text gives content', async () => {
  const r = await client.chat.completions.create({ model, messages, tools, tool_choice: 'auto', seed: 5, max_tokens: 24 });
  const c = r.choices[0];
  assert.notEqual(c.finish_reason, 'tool_calls');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(c.message.content.length > 0);
  assert.equal(c.message.tool_calls, undefined);
});

test('streamed tool call reassembled from deltas', async () => {
  const args = { model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
                 temperature: 1, seed: 11, max_tokens: 250 };
  const stream = await client.chat.completions.create({ ...args, stream: true });
  const calls = [];
  let finish = null, argPieces = 0;
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    for (const d of ch.delta?.tool_calls ?? []) {
      calls[d.index] ??= { id: '', name: '', arguments: '' };
      if (d.id) calls[d.index].id += d.id;
      if (d.function?.name) calls[d.index].name += d.function.name;
      if (d.function?.arguments) { calls[d.index].arguments += d.function.arguments; argPieces++; }
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_weather');
  assert.ok(argPieces > 1, `arguments arrived in ${argPieces} piece(s)`);
  validate(weatherParams, JSON.parse(calls[0].arguments));
  // The same seed without streaming gives the same call.
  const whole = await client.chat.completions.create(args);
  assert.equal(whole.choices[0].message.tool_calls[0].function.arguments, calls[0].arguments);
});

const profile = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 10 },
    role: { type: 'string', enum: ['admin', 'user', 'guest'] },
    scores: { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 4 },
    address: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 8 }, zip: { type: 'integer' },
                    tags: { type: 'array', items: { type: 'string', enum: ['home', 'work'] }, maxItems: 2 } },
      required: ['city', 'tags'],
    },
    active: { type: 'boolean' },
    note: { type: 'null' },
  },
  required: ['name', 'role', 'scores', 'address'],
};

test('json_schema output parses and validates (nested objects, arrays, enums, required)', async () => {
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Make a profile.' }], seed, max_tokens: 400,
      response_format: { type: 'json_schema', json_schema: { name: 'profile', schema: profile, strict: true } },
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop');
    validate(profile, JSON.parse(c.message.content));
  }
});

test('json_object output is a JSON object', async () => {
  const r = await client.chat.completions.create({
    model, messages, seed: 2, max_tokens: 400, temperature: 0.7, response_format: { type: 'json_object' },
  });
  if (r.choices[0].finish_reason === 'stop') {
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(!Array.isArray(v));
  }
});

test('logprobs are <= 0 and match duet logits', async () => {
  const r = await client.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 6, logprobs: true, top_logprobs: 3, ignore_eos: true,
    return_token_ids: true,
  });
  const c = r.choices[0];
  const lps = c.logprobs.content;
  assert.equal(lps.length, c.token_ids.length);
  assert.ok(lps.length > 0);
  const ids = [...r.prompt_token_ids, ...c.token_ids];
  const out = `${workDir}/sdk_logits.f32`;
  execFileSync(duet, ['logits', '-m', modelPath, '--tokens', ids.join(','), '-o', out, '--kv-type', 'f16', '--threads', '1']);
  const buf = readFileSync(out);
  const logits = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  const nVocab = logits.length / ids.length;
  lps.forEach((t, k) => {
    assert.ok(t.logprob <= 0, `logprob ${t.logprob}`);
    const pos = r.prompt_token_ids.length - 1 + k;  // the logits this token was drawn from
    const row = logits.subarray(pos * nVocab, (pos + 1) * nVocab);
    const max = row.reduce((a, b) => Math.max(a, b), -Infinity);
    const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    const ref = row[c.token_ids[k]] - lse;
    assert.ok(Math.abs(t.logprob - ref) < 5e-3, `token ${k}: server ${t.logprob} vs duet logits ${ref}`);
    assert.equal(t.top_logprobs.length, 3);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-9, 'greedy picks the top token');
    assert.ok(Array.isArray(t.bytes) && t.bytes.length > 0);
  });
});

test('n = 3 with a seed: three different completions sharing the prompt blocks', async () => {
  const r = await client.chat.completions.create({ model, messages, n: 3, seed: 42, temperature: 1, max_tokens: 16 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = r.choices.map((c) => c.message.content);
  assert.equal(new Set(texts).size, 3, JSON.stringify(texts));
  // Choices 2 and 3 forked choice 1's prompt KV blocks instead of computing the prompt.
  assert.equal(r.duet.shared_prompt_tokens, 2 * r.usage.prompt_tokens);
  const again = await client.chat.completions.create({ model, messages, n: 3, seed: 42, temperature: 1, max_tokens: 16 });
  assert.deepEqual(again.choices.map((c) => c.message.content), texts);
});

test('unsupported fields that change the output are refused with a 400 naming them', async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages, logit_bias: { 5: 10 } }),
    (e) => e.status === 400 && (e.param ?? e.error?.param) === 'logit_bias' && /'logit_bias' is not supported by duet/.test(e.message));
  await assert.rejects(
    client.completions.create({ model, prompt: 'x', best_of: 2 }),
    (e) => e.status === 400 && (e.param ?? e.error?.param) === 'best_of');
});

let failed = 0;
for (const { name, fn } of tests) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n     ${e.stack ?? e}`);
  }
}
console.log(failed ? `${failed} of ${tests.length} failed` : `all ${tests.length} passed`);
process.exit(failed ? 1 : 0);
