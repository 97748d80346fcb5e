import { FakeLlm } from './fake-llm';
import { CompletionRequest, LlmError } from './llm-provider';

const request = (content: string, extra: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'm-1',
  messages: [{ role: 'user', content }],
  ...extra,
});

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
});
