import { LlmError, LlmStreamEvent, StreamRequest, ToolDefinition } from './llm-provider';
import { OpenAiCompatibleLlm } from './openai-compatible';
import { FakeOpenAiServer } from './testing/fake-openai-server';

// One chat.completion.chunk, for answers scripted as raw server-sent events.
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: 'chatcmpl-raw',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});

describe('OpenAiCompatibleLlm against an OpenAI-protocol server', () => {
  let server: FakeOpenAiServer;
  let baseURL: string;

  beforeEach(async () => {
    server = new FakeOpenAiServer();
    baseURL = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  const llm = (options: { apiKey?: string; maxRetries?: number; timeoutMs?: number } = {}) =>
    new OpenAiCompatibleLlm({ baseURL, maxRetries: 0, ...options });

  it('returns the assistant text, the model the server reports and the tokens it used', async () => {
    server.reply(() => ({ content: 'Hello there.', model: 'gpt-4o-mini-2024-07-18' }));

    const result = await llm().complete({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });

    expect(result).toEqual({ text: 'Hello there.', model: 'gpt-4o-mini-2024-07-18', usage: { inputTokens: 4, outputTokens: 3 } });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].method).toBe('POST');
    expect(server.requests[0].path).toBe('/v1/chat/completions');
    expect(server.requests[0].body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
  });

  it('falls back to the requested model when the server reports none', async () => {
    server.reply(() => ({ content: 'x', model: '' }));

    await expect(llm().complete({ model: 'llama3.1:8b', messages: [{ role: 'user', content: 'x' }] })).resolves.toMatchObject({
      text: 'x',
      model: 'llama3.1:8b',
    });
  });

  it('asks for a JSON object with response_format in json mode, and only then', async () => {
    server.reply(() => '{"ok":true}');

    const result = await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'json please' }], json: true });
    await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'plain' }] });

    expect(result.text).toBe('{"ok":true}');
    expect(server.requests.map((r) => r.body)[0].response_format).toEqual({ type: 'json_object' });
    expect(server.requests.map((r) => r.body)[1]).not.toHaveProperty('response_format');
  });

  it('forwards temperature and max_tokens, and leaves them out when unset', async () => {
    await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'a' }], temperature: 0.2, maxTokens: 321 });
    await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'b' }], temperature: 0 });
    await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'c' }] });

    const [first, second, third] = server.requests.map((r) => r.body);
    expect(first.temperature).toBe(0.2);
    expect(first.max_tokens).toBe(321);
    expect(second.temperature).toBe(0);
    expect(second).not.toHaveProperty('max_tokens');
    expect(third).not.toHaveProperty('temperature');
    expect(third).not.toHaveProperty('max_tokens');
    expect(third).not.toHaveProperty('stream', true);
  });

  it('sends the API key as a bearer token', async () => {
    await llm({ apiKey: 'sk-test-123' }).complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] });

    expect(server.requests[0].headers.authorization).toBe('Bearer sk-test-123');
  });

  it('sends no Authorization header without a key, and ignores OPENAI_API_KEY from the environment', async () => {
    const saved = process.env['OPENAI_API_KEY'];
    process.env['OPENAI_API_KEY'] = 'sk-from-env';
    try {
      await llm().complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    } finally {
      if (saved === undefined) delete process.env['OPENAI_API_KEY'];
      else process.env['OPENAI_API_KEY'] = saved;
    }

    expect(server.requests[0].headers).not.toHaveProperty('authorization');
  });

  it('turns a 500 into an LlmError carrying the status and the server message (maxRetries 0: one attempt)', async () => {
    server.reply(() => ({ status: 500, body: { error: { message: 'model crashed', type: 'server_error' } } }));

    const error = await llm({ maxRetries: 0 })
      .complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ name: 'LlmError', code: 'http', status: 500 });
    expect((error as LlmError).message).toContain('model crashed');
    expect(server.requests).toHaveLength(1);
  });

  it('retries a 5xx up to maxRetries before giving up', async () => {
    let calls = 0;
    server.reply(() => (++calls < 2 ? { status: 503, body: { error: { message: 'busy' } } } : 'recovered'));

    const result = await llm({ maxRetries: 1 }).complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] });

    expect(result.text).toBe('recovered');
    expect(server.requests).toHaveLength(2);
  });

  it('reports a 401 with its status and does not retry it', async () => {
    server.reply(() => ({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } }));

    await expect(
      llm({ apiKey: 'sk-bad', maxRetries: 2 }).complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ code: 'http', status: 401 });
    expect(server.requests).toHaveLength(1);
  });

  it('aborts an in-flight request when the AbortSignal fires', async () => {
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    server.reply(() => {
      received();
      return new Promise<never>(() => undefined); // never answers
    });
    const controller = new AbortController();

    const pending = llm({ maxRetries: 2 }).complete({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      signal: controller.signal,
    });
    await arrived;
    controller.abort();

    await expect(pending).rejects.toMatchObject({ name: 'LlmError', code: 'aborted', status: undefined });
    expect(server.requests).toHaveLength(1);
  });

  it('does not send anything when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();

    await expect(
      llm().complete({ model: 'm', messages: [{ role: 'user', content: 'x' }], signal: controller.signal }),
    ).rejects.toMatchObject({ code: 'aborted' });
    expect(server.requests).toHaveLength(0);
  });

  it('gives up with a timeout error when the server does not answer within timeoutMs', async () => {
    server.reply(() => new Promise<never>(() => undefined));

    await expect(
      llm({ timeoutMs: 150, maxRetries: 0 }).complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ code: 'timeout' });
  });

  it('reports an unreachable server as a connection error', async () => {
    await server.stop();

    await expect(llm().complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
      name: 'LlmError',
      code: 'connection',
    });
  });

  it('rejects an answer without message text', async () => {
    server.reply(() => ({
      status: 200,
      body: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: null }, finish_reason: 'tool_calls' }],
      },
    }));

    await expect(llm().complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
      code: 'invalid_response',
    });
  });

  it('uses the configured name in errors', async () => {
    server.reply(() => ({ status: 500, body: { error: { message: 'nope' } } }));
    const named = new OpenAiCompatibleLlm({ name: 'ollama', baseURL, maxRetries: 0 });

    expect(named.name).toBe('ollama');
    await expect(named.complete({ model: 'llama3', messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(
      /^ollama \(model llama3\)/,
    );
  });

  describe('stream', () => {
    const weather: ToolDefinition = {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    };
    const ask = (extra: Partial<StreamRequest> = {}): StreamRequest => ({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      ...extra,
    });
    const collect = async (events: AsyncIterable<LlmStreamEvent>) => {
      const out: LlmStreamEvent[] = [];
      for await (const event of events) out.push(event);
      return out;
    };

    it('delivers text deltas incrementally: the first arrives before the server has finished', async () => {
      server.reply(() => ({ content: ['Hel', 'lo ', 'there.'], model: 'm-0001', chunkDelayMs: 80 }));

      const events: LlmStreamEvent[] = [];
      let outcomeAtFirstDelta: string | undefined = 'unseen';
      for await (const event of llm().stream(ask())) {
        if (events.length === 0) outcomeAtFirstDelta = server.requests[0].outcome;
        events.push(event);
      }

      expect(outcomeAtFirstDelta).toBeUndefined();
      expect(events).toEqual([
        { type: 'text', delta: 'Hel' },
        { type: 'text', delta: 'lo ' },
        { type: 'text', delta: 'there.' },
        { type: 'done', finishReason: 'stop', model: 'm-0001', usage: { inputTokens: 1, outputTokens: 3 } },
      ]);
      expect(await server.requests[0].ended).toBe('finished');
    });

    it('sends stream (asking for the usage chunk), tools, tool_choice, temperature and max_tokens', async () => {
      await collect(llm().stream(ask({ tools: [weather], toolChoice: 'auto', temperature: 0.3, maxTokens: 200 })));
      await collect(llm().stream(ask({ tools: [], toolChoice: 'required' })));

      const [withTools, withoutTools] = server.requests.map((r) => r.body);
      expect(withTools).toEqual({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.3,
        max_tokens: 200,
        tools: [{ type: 'function', function: weather }],
        tool_choice: 'auto',
      });
      expect(withoutTools).not.toHaveProperty('tools');
      expect(withoutTools).not.toHaveProperty('tool_choice');
    });

    it('forces one named tool as OpenAI names a function choice', async () => {
      await collect(llm().stream(ask({ tools: [weather], toolChoice: { name: 'get_weather' } })));

      expect(server.requests[0].body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    });

    it('reassembles a tool call from deltas split across chunks (id and name first, arguments in pieces)', async () => {
      server.reply(() => ({
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: ['{"ci', 'ty": "Pa', 'ris"}'] }],
      }));

      const events = await collect(llm().stream(ask({ tools: [weather] })));

      expect(events).toEqual([
        { type: 'tool_calls', calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city": "Paris"}' }] },
        { type: 'done', finishReason: 'tool_calls', model: 'm', usage: { inputTokens: 1, outputTokens: 0 } },
      ]);
    });

    it('reassembles several tool calls, after any text, in index order', async () => {
      server.reply(() => ({
        content: 'Checking both.',
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_b', name: 'get_weather', arguments: '{"city":"Zürich 🌧"}' },
        ],
      }));

      const events = await collect(llm().stream(ask({ tools: [weather] })));

      expect(events.filter((e) => e.type === 'text').map((e) => e.delta).join('')).toBe('Checking both.');
      expect(events.slice(-2)).toEqual([
        {
          type: 'tool_calls',
          calls: [
            { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
            { id: 'call_b', name: 'get_weather', arguments: '{"city":"Zürich 🌧"}' },
          ],
        },
        { type: 'done', finishReason: 'tool_calls', model: 'm', usage: { inputTokens: 1, outputTokens: 4 } },
      ]);
    });

    it('sends assistant tool calls and tool results in the history in OpenAI\'s shape', async () => {
      await collect(
        llm().stream(
          ask({
            tools: [weather],
            messages: [
              { role: 'user', content: 'Weather in Paris?' },
              { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
              { role: 'tool', toolCallId: 'call_1', content: '{"temp":21}' },
            ],
          }),
        ),
      );

      expect(server.requests[0].body.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      ]);
    });

    it('stops at once when aborted mid-stream, and the server sees the connection close', async () => {
      server.reply(() => ({ content: ['one ', 'two ', 'three ', 'four'], chunkDelayMs: 2_000 }));
      const controller = new AbortController();

      const seen: LlmStreamEvent[] = [];
      let abortedAt = 0;
      const error = await (async () => {
        for await (const event of llm().stream(ask({ signal: controller.signal }))) {
          seen.push(event);
          setTimeout(() => {
            abortedAt = Date.now();
            controller.abort();
          }, 20);
        }
      })().catch((e: unknown) => e);

      expect(Date.now() - abortedAt).toBeLessThan(500);
      expect(error).toBeInstanceOf(LlmError);
      expect(error).toMatchObject({ code: 'aborted' });
      expect(seen).toEqual([{ type: 'text', delta: 'one ' }]);
      expect(await server.requests[0].ended).toBe('closed');
    });

    it('cancels the request when the consumer leaves the loop early', async () => {
      server.reply(() => ({ content: ['a ', 'b ', 'c'], chunkDelayMs: 2_000 }));

      for await (const event of llm().stream(ask())) {
        expect(event).toEqual({ type: 'text', delta: 'a ' });
        break;
      }

      expect(await server.requests[0].ended).toBe('closed');
    });

    it('does not send anything when the signal is already aborted', async () => {
      const controller = new AbortController();
      controller.abort();

      await expect(collect(llm().stream(ask({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
      expect(server.requests).toHaveLength(0);
    });

    it('turns a 500 into an LlmError http with the status', async () => {
      server.reply(() => ({ status: 500, body: { error: { message: 'model crashed', type: 'server_error' } } }));

      const error = await collect(llm().stream(ask())).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(LlmError);
      expect(error).toMatchObject({ code: 'http', status: 500 });
      expect((error as LlmError).message).toContain('model crashed');
    });

    it('reports a stream the server cuts off as a connection error', async () => {
      server.reply(() => ({ content: ['partial ', 'answer'], chunkDelayMs: 100 }));

      const events: LlmStreamEvent[] = [];
      const error = await (async () => {
        for await (const event of llm().stream(ask())) {
          events.push(event);
          await server.stop();
        }
      })().catch((e: unknown) => e);

      expect(events).toEqual([{ type: 'text', delta: 'partial ' }]);
      expect(error).toMatchObject({ name: 'LlmError', code: 'connection' });
    });

    it('reports an error event inside the stream as an LlmError', async () => {
      server.reply(() => ({
        sse: [chunk({ content: 'Hi' }), { error: { message: 'overloaded mid-answer', type: 'server_error' } }],
      }));

      const events: LlmStreamEvent[] = [];
      const error = await (async () => {
        for await (const event of llm().stream(ask())) events.push(event);
      })().catch((e: unknown) => e);

      expect(events).toEqual([{ type: 'text', delta: 'Hi' }]);
      expect(error).toBeInstanceOf(LlmError);
      expect((error as LlmError).message).toContain('overloaded mid-answer');
    });

    it('reports a stream that ends without a finish reason as invalid', async () => {
      server.reply(() => ({ sse: [chunk({ content: 'Hi' }), '[DONE]'] }));

      await expect(collect(llm().stream(ask()))).rejects.toMatchObject({ code: 'invalid_response' });
    });

    it('assembles tool calls from servers that omit index, and invents missing ids', async () => {
      server.reply(() => ({
        sse: [
          chunk({ role: 'assistant', content: '' }),
          chunk({ tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ function: { arguments: '"Oslo"}' } }] }),
          chunk({ tool_calls: [{ type: 'function', function: { name: 'hang_up', arguments: '{}' } }] }),
          chunk({}, 'tool_calls'),
          '[DONE]',
        ],
      }));

      const events = await collect(llm().stream(ask({ tools: [weather] })));

      expect(events).toEqual([
        {
          type: 'tool_calls',
          calls: [
            { id: 'call_x', name: 'get_weather', arguments: '{"city":"Oslo"}' },
            { id: expect.stringMatching(/^call_/), name: 'hang_up', arguments: '{}' },
          ],
        },
        { type: 'done', finishReason: 'tool_calls', model: 'm' },
      ]);
    });
  });
});
