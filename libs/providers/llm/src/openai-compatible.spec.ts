import { LlmError } from './llm-provider';
import { OpenAiCompatibleLlm } from './openai-compatible';
import { FakeOpenAiServer } from './testing/fake-openai-server';

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

  it('returns the assistant text and the model the server reports', async () => {
    server.reply(() => ({ content: 'Hello there.', model: 'gpt-4o-mini-2024-07-18' }));

    const result = await llm().complete({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });

    expect(result).toEqual({ text: 'Hello there.', model: 'gpt-4o-mini-2024-07-18' });
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

    await expect(llm().complete({ model: 'llama3.1:8b', messages: [{ role: 'user', content: 'x' }] })).resolves.toEqual({
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
});
