import OpenAI from 'openai';
import { FakeOpenAiServer } from './fake-openai-server';

describe('FakeOpenAiServer', () => {
  let server: FakeOpenAiServer;
  let baseURL: string;

  beforeEach(async () => {
    server = new FakeOpenAiServer({ models: ['fake-model', 'fake-large'] });
    baseURL = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  it('listens on 127.0.0.1 and returns a /v1 base URL', () => {
    expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(server.baseURL).toBe(baseURL);
  });

  it('answers a chat completion in the OpenAI shape', async () => {
    server.reply((body) => `echo: ${String(body.messages.at(-1)?.content)}`);

    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const json = (await res.json()) as Record<string, unknown>;

    expect(res.status).toBe(200);
    expect(json).toMatchObject({
      object: 'chat.completion',
      model: 'fake-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'echo: hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    expect(json['id']).toMatch(/^chatcmpl-/);
    expect(typeof json['created']).toBe('number');
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer k' },
      body: { model: 'fake-model' },
    });
  });

  it('streams server-sent chat.completion.chunk events ending with [DONE]', async () => {
    server.reply(() => 'one two three');

    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'count' }] }),
    });
    const text = await res.text();
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.replace(/^data: /, ''));

    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('one two three');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
  });

  it('is readable by the official SDK, streaming included (with usage when asked)', async () => {
    server.reply(() => ({ content: 'streamed reply', model: 'fake-model-0001' }));
    const client = new OpenAI({ baseURL, apiKey: 'k', maxRetries: 0 });

    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let finish: string | null = null;
    let totalTokens = 0;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      totalTokens = chunk.usage?.total_tokens ?? totalTokens;
      expect(chunk.model).toBe('fake-model-0001');
    }

    expect(content).toBe('streamed reply');
    expect(finish).toBe('stop');
    expect(totalTokens).toBeGreaterThan(0);
  });

  it('lists its models', async () => {
    const client = new OpenAI({ baseURL, apiKey: 'k', maxRetries: 0 });

    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);

    expect(ids).toEqual(['fake-model', 'fake-large']);
  });

  it('sends a scripted status and body as is', async () => {
    server.reply(() => ({ status: 429, body: { error: { message: 'slow down', type: 'rate_limit_error' } } }));

    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [] }),
    });

    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: { message: 'slow down', type: 'rate_limit_error' } });
  });

  it('answers 400 to a malformed body and 404 to an unknown route, OpenAI-style', async () => {
    const bad = await fetch(`${baseURL}/chat/completions`, { method: 'POST', body: '{nope' });
    const missing = await fetch(`${baseURL}/completions/legacy`);

    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { message: expect.stringContaining('/v1/completions/legacy') } });
  });

  it('stops even with a request still waiting on its handler', async () => {
    server.reply(() => new Promise<never>(() => undefined));
    const pending = fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'fake-model', messages: [] }),
    }).catch((e: unknown) => e);
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));

    await server.stop();

    // (fetch's TypeError comes from Node's realm, not the test's: check the shape rather than instanceof)
    expect(await pending).toMatchObject({ name: 'TypeError', message: 'fetch failed' });
  });

  const postStream = async (body: Record<string, unknown>) => {
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'x' }], ...body }),
    });
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.replace(/^data: /, ''));
    return { res, events, chunks: events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e)) };
  };

  it('streams tool calls as OpenAI does: index, id, type and name first, then argument fragments', async () => {
    server.reply(() => ({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }] }));

    const { events, chunks } = await postStream({});
    const deltas = chunks.map((c) => c.choices[0].delta);

    expect(events.at(-1)).toBe('[DONE]');
    expect(deltas[0]).toEqual({ role: 'assistant', content: null, refusal: null });
    expect(deltas[1]).toEqual({
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
    });
    const fragments = deltas.slice(2, -1);
    expect(fragments.length).toBeGreaterThan(1);
    for (const d of fragments) expect(Object.keys(d.tool_calls[0]).sort()).toEqual(['function', 'index']);
    expect(fragments.map((d) => d.tool_calls[0].function.arguments).join('')).toBe('{"city":"Paris","unit":"c"}');
    expect(chunks.at(-1).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
  });

  it('records the tools sent', async () => {
    const tools = [{ type: 'function', function: { name: 'hang_up', description: 'End', parameters: { type: 'object' } } }];

    await postStream({ tools, tool_choice: 'required' });

    expect(server.requests[0].body.tools).toEqual(tools);
    expect(server.requests[0].body.tool_choice).toBe('required');
  });

  it('answers tool calls without streaming too', async () => {
    server.reply(() => ({ toolCalls: [{ id: 'call_9', name: 'hang_up', arguments: ['{', '}'] }] }));
    const client = new OpenAI({ baseURL, apiKey: 'k', maxRetries: 0 });

    const completion = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'bye' }] });

    expect(completion.choices[0].finish_reason).toBe('tool_calls');
    expect(completion.choices[0].message).toMatchObject({
      content: null,
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'hang_up', arguments: '{}' } }],
    });
  });

  it('waits the first-token delay and the per-chunk delay, and reports the answer finished', async () => {
    server.reply(() => ({ content: ['a', 'b'], firstTokenDelayMs: 150, chunkDelayMs: 60 }));
    const start = Date.now();

    await postStream({});

    expect(Date.now() - start).toBeGreaterThanOrEqual(150 + 2 * 60 - 15);
    expect(await server.requests[0].ended).toBe('finished');
    expect(server.requests[0].outcome).toBe('finished');
  });

  it('sees a client hang up mid-stream and stops writing', async () => {
    server.reply(() => ({ content: ['a', 'b', 'c'], chunkDelayMs: 5_000 }));
    const controller = new AbortController();

    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [] }),
      signal: controller.signal,
    });
    await res.body?.getReader().read();
    controller.abort();

    expect(await server.requests[0].ended).toBe('closed');
  });

  it('sends raw server-sent events as given', async () => {
    server.reply(() => ({ sse: [{ custom: true }, 'not json'] }));

    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [] }),
    });

    expect(await res.text()).toBe('data: {"custom":true}\n\ndata: not json\n\n');
  });
});
