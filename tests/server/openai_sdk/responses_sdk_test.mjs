// POST /v1/responses driven through the official `openai` npm SDK against the real `duet serve`
// (started by run_sdk_test.sh with a generated tiny model that knows nothing of JSON): a plain
// response, the SDK's stream helper (which rebuilds the response from every event and throws on
// an event out of place), a tool call answered with function_call_output, previous_response_id
// with retrieve and delete, structured output with a json_schema, and the schemas agent
// frameworks emit — zod (through the SDK's zod helpers, which parse the output with zod) and a
// pydantic-style schema with $defs — through both /v1/responses and /v1/chat/completions.
// Usage: node responses_sdk_test.mjs BASE_URL
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { validate } from './validate.mjs';

const [baseURL] = process.argv.slice(2);
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
  { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: weatherParams, strict: true },
  { type: 'function', name: 'get_time', description: 'Time in a zone', strict: true,
    parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'] } },
];
const profile = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 10 },
    role: { type: 'string', enum: ['admin', 'user', 'guest'] },
    scores: { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 4 },
    address: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 8 }, zip: { type: 'integer' } },
      required: ['city'],
    },
    active: { type: 'boolean' },
  },
  required: ['name', 'role', 'scores', 'address'],
};

// The text of a response's message items (what the SDK's output_text holds, which the stream
// helper's final response does not set).
const textOf = (r) => r.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('plain response: output_text, usage, status', async () => {
  const r = await client.responses.create({
    model, instructions: 'You are terse.', input: 'Say hello to the reader.', max_output_tokens: 16, temperature: 0,
  });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.model, model);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.output_text, r.output[0].content[0].text);  // the SDK's convenience property
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  if (r.status === 'incomplete') {
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.usage.output_tokens, 16);
  }
  assert.ok(r.duet.host.total_ms >= 0);
});

test('stream helper: every event in order, final response equals the deltas and the non-streamed answer', async () => {
  const params = { model, input: 'Count to five.', max_output_tokens: 24, temperature: 0 };
  const stream = client.responses.stream(params);
  const types = [];
  const seqs = [];
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  for await (const event of stream) {
    types.push(event.type);
    seqs.push(event.sequence_number);
  }
  const final = await stream.finalResponse();
  assert.deepEqual(seqs, seqs.map((_, i) => i));
  assert.deepEqual(types.slice(0, 4),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.deepEqual(types.slice(-4).slice(0, 3),
    ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']);
  assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
  assert.ok(types.filter((t) => t === 'response.output_text.delta').length > 1);
  assert.equal(textOf(final), deltas);
  const whole = await client.responses.create(params);
  assert.equal(whole.output_text, deltas);
});

test('tool call round trip: function_call, then function_call_output (stored and resent)', async () => {
  const input = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  const first = await client.responses.create({
    model, input, tools, tool_choice: { type: 'function', name: 'get_weather' }, seed: 3, max_output_tokens: 250,
  });
  assert.equal(first.status, 'completed');
  assert.equal(first.output.length, 1);
  const call = first.output[0];
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  assert.match(call.id, /^fc_/);
  validate(weatherParams, JSON.parse(call.arguments));
  const result = { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ celsius: 12 }) };

  // Stored: previous_response_id carries the call; only its output is sent.
  const next = await client.responses.create({ model, previous_response_id: first.id, input: [result], tools,
                                               max_output_tokens: 8, temperature: 0 });
  assert.equal(next.previous_response_id, first.id);
  assert.ok(next.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens);
  assert.ok(next.usage.input_tokens_details.cached_tokens > 0, 'the first turn\'s KV blocks are reused');
  // Stateless: the client resends the conversation with the output items as they came.
  const resent = await client.responses.create({ model, input: [...input, ...first.output, result], tools,
                                                 tool_choice: 'none', max_output_tokens: 8, temperature: 0, store: false });
  assert.equal(resent.output[0].type, 'message');
  // A streamed forced call: the helper rebuilds the arguments from their deltas.
  const stream = client.responses.stream({ model, input, tools, tool_choice: 'required', seed: 5, max_output_tokens: 250 });
  let pieces = 0;
  stream.on('response.function_call_arguments.delta', () => { pieces++; });
  const done = [];
  stream.on('response.function_call_arguments.done', (e) => done.push(e));
  const final = await stream.finalResponse();
  const streamed = final.output[0];
  assert.equal(streamed.type, 'function_call');
  assert.ok(pieces > 1, `arguments arrived in ${pieces} piece(s)`);
  assert.equal(done.length, 1);
  assert.equal(done[0].arguments, streamed.arguments);
  assert.equal(done[0].name, streamed.name);
  validate(tools.find((t) => t.name === streamed.name).parameters, JSON.parse(streamed.arguments));
});

test('previous_response_id, retrieve and delete', async () => {
  const first = await client.responses.create({ model, input: 'My name is Ada.', max_output_tokens: 6, temperature: 0 });
  const second = await client.responses.create({ model, previous_response_id: first.id, input: 'What is my name?',
                                                 max_output_tokens: 6, temperature: 0 });
  assert.ok(second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens);
  const got = await client.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.equal(got.output_text, first.output_text);
  assert.deepEqual(got.usage, first.usage);
  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);
  // The second response keeps the whole conversation: it still continues.
  const third = await client.responses.create({ model, previous_response_id: second.id, input: 'Again?',
                                                max_output_tokens: 2 });
  assert.ok(third.usage.input_tokens > second.usage.input_tokens);
});

test('structured output with a json_schema parses and validates', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.responses.parse({
      model, input: 'Make a profile.', seed, max_output_tokens: 400,
      text: { format: { type: 'json_schema', name: 'profile', schema: profile, strict: true } },
    });
    assert.equal(r.status, 'completed');
    validate(profile, r.output_parsed);
    assert.deepEqual(r.output_parsed, JSON.parse(r.output_text));
  }
  const streamed = await client.responses.stream({
    model, input: 'Make a profile.', seed: 4, max_output_tokens: 400,
    text: { format: { type: 'json_schema', name: 'profile', schema: profile, strict: true } },
  }).finalResponse();
  validate(profile, JSON.parse(textOf(streamed)));
});

// zod as agent frameworks use it: integers (zod writes +-2^53 bounds), bounded integers, enums,
// a nested object, a nullable field, an optional-nullable field, an array of enums. The SDK
// helpers send the JSON Schema zod generates and parse the output with the zod schema.
const Address = z.strictObject({ city: z.string().max(8), zip: z.number().int().nullable() });
const Person = z.strictObject({
  name: z.string().max(10),
  age: z.number().int().min(0).max(130),
  score: z.number().int(),
  role: z.enum(['admin', 'user', 'guest']),
  address: Address,
  nickname: z.string().max(6).nullable().optional(),
  tags: z.array(z.enum(['a', 'b'])).max(2),
});

test('a zod schema through both routes: parsed by zod, the same object from each', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.responses.parse({
      model, input: 'Describe a person.', seed, max_output_tokens: 400,
      text: { format: zodTextFormat(Person, 'person') },
    });
    assert.equal(r.status, 'completed');
    Person.parse(r.output_parsed);
    const c = await client.chat.completions.parse({
      model, messages: [{ role: 'user', content: 'Describe a person.' }], seed, max_tokens: 400,
      response_format: zodResponseFormat(Person, 'person'),
    });
    assert.equal(c.choices[0].finish_reason, 'stop');
    // Same template, grammar and seed: the same object.
    assert.deepEqual(c.choices[0].message.parsed, r.output_parsed);
  }
});

// What pydantic v2's model_json_schema() writes for nested models: $defs + $ref, titles,
// Optional[...] as anyOf with null and a default. Checked with the equivalent zod schema.
const pydanticSchema = {
  $defs: {
    Item: {
      properties: {
        sku: { maxLength: 6, title: 'Sku', type: 'string' },
        qty: { maximum: 99, minimum: 1, title: 'Qty', type: 'integer' },
      },
      required: ['sku', 'qty'], title: 'Item', type: 'object', additionalProperties: false,
    },
  },
  properties: {
    order_id: { title: 'Order Id', type: 'integer', minimum: 0 },
    items: { items: { $ref: '#/$defs/Item' }, maxItems: 3, minItems: 1, title: 'Items', type: 'array' },
    note: { anyOf: [{ maxLength: 8, type: 'string' }, { type: 'null' }], default: null, title: 'Note' },
    status: { enum: ['open', 'paid'], title: 'Status', type: 'string' },
  },
  required: ['order_id', 'items', 'note', 'status'], title: 'Order', type: 'object', additionalProperties: false,
};
// order_id as JSON Schema means it: an integer >= 0 of any size (pydantic's int is unbounded;
// zod's int() would also demand |x| <= 2^53 - 1, which the schema does not say).
const Order = z.strictObject({
  order_id: z.number().min(0).refine(Number.isInteger, 'not an integer'),
  items: z.array(z.strictObject({ sku: z.string().max(6), qty: z.number().int().min(1).max(99) })).min(1).max(3),
  note: z.string().max(8).nullable(),
  status: z.enum(['open', 'paid']),
});

test('a pydantic-style schema with $defs through both routes validates', async () => {
  for (const seed of [1, 2]) {
    const r = await client.responses.create({
      model, input: 'An order.', seed, max_output_tokens: 400,
      text: { format: { type: 'json_schema', name: 'Order', schema: pydanticSchema, strict: true } },
    });
    assert.equal(r.status, 'completed');
    Order.parse(JSON.parse(r.output_text));
    const c = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'An order.' }], seed, max_tokens: 400,
      response_format: { type: 'json_schema', json_schema: { name: 'Order', schema: pydanticSchema, strict: true } },
    });
    assert.equal(c.choices[0].finish_reason, 'stop');
    Order.parse(JSON.parse(c.choices[0].message.content));
    assert.equal(c.choices[0].message.content, r.output_text);
  }
});

test('unsupported fields are refused with a 400 naming them', async () => {
  await assert.rejects(
    client.responses.create({ model, input: 'x', reasoning: { effort: 'high' } }),
    (e) => e.status === 400 && e.param === 'reasoning' && /'reasoning' is not supported by duet/.test(e.message));
  await assert.rejects(
    client.responses.create({ model, input: 'x', tools: [{ type: 'web_search' }] }),
    (e) => e.status === 400 && e.param === 'tools[0].type');
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
