import { FakeLlm } from './fake-llm';
import { CompletionRequest, LlmError, LlmStreamEvent, StreamRequest } from './llm-provider';

const request = (content: string, extra: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'm-1',
  messages: [{ role: 'user', content }],
  ...extra,
});

const collect = async (events: AsyncIterable<LlmStreamEvent>) => {
  const out: LlmStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
};

describe('FakeLlm', () => {
  it('answers from its script in order, reporting the requested model', async () => {
    const llm = new FakeLlm(['first', 'second']);

    expect(await llm.complete(request('a'))).toEqual({ text: 'first', model: 'm-1' });
    expect(await llm.complete(request('b'))).toEqual({ text: 'second', model: 'm-1' });
    expect(llm.pending).toBe(0);
  });

  it('records every request', async () => {
    const llm = new FakeLlm(['x', 'y']);

    await llm.complete(request('a', { json: true, temperature: 0 }));
    await llm.complete(request('b'));

    expect(llm.requests.map((r) => r.messages[0].content)).toEqual(['a', 'b']);
    expect(llm.requests[0]).toMatchObject({ json: true, temperature: 0 });
    expect(llm.lastRequest?.messages[0].content).toBe('b');
  });

  it('takes full results, functions of the request and errors as replies', async () => {
    const failure = new LlmError('down', { code: 'http', status: 502 });
    const llm = new FakeLlm([{ text: 'r', model: 'other-model' }, (req) => `saw ${req.messages[0].content}`, failure]);
    llm.reply(async () => ({ text: 'async', model: 'z' }));

    expect(await llm.complete(request('a'))).toEqual({ text: 'r', model: 'other-model' });
    expect(await llm.complete(request('b'))).toEqual({ text: 'saw b', model: 'm-1' });
    await expect(llm.complete(request('c'))).rejects.toBe(failure);
    expect(await llm.complete(request('d'))).toEqual({ text: 'async', model: 'z' });
  });

  it('fails once the script is used up, unless a fallback is set', async () => {
    const strict = new FakeLlm(['only']);
    const lenient = new FakeLlm([], { fallback: 'again', name: 'lenient' });

    await strict.complete(request('a'));
    await expect(strict.complete(request('b'))).rejects.toBeInstanceOf(LlmError);
    expect(await lenient.complete(request('a'))).toEqual({ text: 'again', model: 'm-1' });
    expect(await lenient.complete(request('b'))).toEqual({ text: 'again', model: 'm-1' });
    expect(lenient.name).toBe('lenient');
    expect(strict.name).toBe('fake');
  });

  it('fails an aborted request without using a reply', async () => {
    const llm = new FakeLlm(['kept']);
    const controller = new AbortController();
    controller.abort();

    await expect(llm.complete(request('a', { signal: controller.signal }))).rejects.toMatchObject({
      name: 'LlmError',
      code: 'aborted',
    });
    expect(llm.pending).toBe(1);
  });

  describe('stream', () => {
    const ask = (extra: Partial<StreamRequest> = {}): StreamRequest => ({
      model: 'm-1',
      messages: [{ role: 'user', content: 'hi' }],
      ...extra,
    });

    it('streams a scripted text reply as its deltas, then done', async () => {
      const llm = new FakeLlm([{ deltas: ['Hel', 'lo', '.'] }]);

      expect(await collect(llm.stream(ask()))).toEqual([
        { type: 'text', delta: 'Hel' },
        { type: 'text', delta: 'lo' },
        { type: 'text', delta: '.' },
        { type: 'done', finishReason: 'stop', model: 'm-1' },
      ]);
    });

    it('streams plain strings and results in word-sized deltas', async () => {
      const llm = new FakeLlm(['one two three', { text: 'four', model: 'other' }]);

      const first = await collect(llm.stream(ask()));
      const second = await collect(llm.stream(ask()));

      expect(first.filter((e) => e.type === 'text')).toHaveLength(3);
      expect(first.map((e) => (e.type === 'text' ? e.delta : '')).join('')).toBe('one two three');
      expect(second).toEqual([
        { type: 'text', delta: 'four' },
        { type: 'done', finishReason: 'stop', model: 'other' },
      ]);
    });

    it('emits scripted tool calls once, after the text, with finish reason tool_calls', async () => {
      const call = { id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' };
      const llm = new FakeLlm([{ deltas: ['Let me check.'], toolCalls: [call] }]);

      expect(await collect(llm.stream(ask()))).toEqual([
        { type: 'text', delta: 'Let me check.' },
        { type: 'tool_calls', calls: [call] },
        { type: 'done', finishReason: 'tool_calls', model: 'm-1' },
      ]);
    });

    it('waits the first-token delay, then the per-delta delay', async () => {
      const llm = new FakeLlm([{ deltas: ['a', 'b', 'c'], firstTokenDelayMs: 120, deltaDelayMs: 40 }]);
      const start = Date.now();
      const times: number[] = [];

      for await (const event of llm.stream(ask())) if (event.type === 'text') times.push(Date.now() - start);

      expect(times[0]).toBeGreaterThanOrEqual(110);
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(30);
      expect(times[2] - times[1]).toBeGreaterThanOrEqual(30);
    });

    it('fails at once when aborted during a delay', async () => {
      const llm = new FakeLlm([{ deltas: ['a', 'b'], deltaDelayMs: 5_000 }]);
      const controller = new AbortController();
      const seen: LlmStreamEvent[] = [];
      let abortedAt = 0;

      const error = await (async () => {
        for await (const event of llm.stream(ask({ signal: controller.signal }))) {
          seen.push(event);
          setTimeout(() => {
            abortedAt = Date.now();
            controller.abort();
          }, 10);
        }
      })().catch((e: unknown) => e);

      expect(Date.now() - abortedAt).toBeLessThan(1000);
      expect(error).toMatchObject({ name: 'LlmError', code: 'aborted' });
      expect(seen).toEqual([{ type: 'text', delta: 'a' }]);
    });

    it('yields nothing more once aborted between events', async () => {
      const llm = new FakeLlm([{ deltas: ['a', 'b', 'c'] }]);
      const controller = new AbortController();
      const seen: LlmStreamEvent[] = [];

      const error = await (async () => {
        for await (const event of llm.stream(ask({ signal: controller.signal }))) {
          seen.push(event);
          controller.abort();
        }
      })().catch((e: unknown) => e);

      expect(error).toMatchObject({ code: 'aborted' });
      expect(seen).toHaveLength(1);
    });

    it('fails an already aborted request without using a reply', async () => {
      const llm = new FakeLlm([{ deltas: ['kept'] }]);
      const controller = new AbortController();
      controller.abort();

      await expect(collect(llm.stream(ask({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
      expect(llm.pending).toBe(1);
    });

    it('records messages and tools, taking replies in call order', async () => {
      const tools = [{ name: 'hang_up', description: 'End the call', parameters: { type: 'object', properties: {} } }];
      const llm = new FakeLlm(['first', (req) => `saw ${req.tools?.length ?? 0} tools`]);

      const a = llm.stream(ask({ tools, toolChoice: 'auto' }));
      const b = llm.stream(ask({ messages: [{ role: 'tool', toolCallId: 'call_1', content: 'done' }], tools }));
      const textOf = async (events: AsyncIterable<LlmStreamEvent>) =>
        (await collect(events)).map((e) => (e.type === 'text' ? e.delta : '')).join('');

      expect(await textOf(b)).toBe('saw 1 tools');
      expect(await textOf(a)).toBe('first');
      expect(llm.requests[0]).toMatchObject({ tools, toolChoice: 'auto' });
      expect(llm.lastRequest?.messages).toEqual([{ role: 'tool', toolCallId: 'call_1', content: 'done' }]);
    });

    it('throws scripted errors, before any event or after the streamed part', async () => {
      const failure = new LlmError('down', { code: 'http', status: 503 });
      const midway = new LlmError('cut', { code: 'connection' });
      const llm = new FakeLlm([failure, { deltas: ['partial'], error: midway }]);

      await expect(collect(llm.stream(ask()))).rejects.toBe(failure);
      const seen: LlmStreamEvent[] = [];
      const error = await (async () => {
        for await (const event of llm.stream(ask())) seen.push(event);
      })().catch((e: unknown) => e);
      expect(error).toBe(midway);
      expect(seen).toEqual([{ type: 'text', delta: 'partial' }]);
    });

    it('fails once the script is used up', async () => {
      await expect(collect(new FakeLlm().stream(ask()))).rejects.toMatchObject({ code: 'invalid_response' });
    });

    it('answers complete() with the joined deltas of a stream reply', async () => {
      const llm = new FakeLlm([{ deltas: ['{"a":', '1}'], model: 'x' }]);

      expect(await llm.complete(ask())).toEqual({ text: '{"a":1}', model: 'x' });
    });
  });
});
