import type { LlmProvider, LlmStreamEvent } from '@parley/llm';
import type { SpeechToText, TextToSpeech } from '@parley/speech';
import { UsageMeter } from './usage-meter';

describe('UsageMeter', () => {
  const stt: SpeechToText = {
    name: 'deepgram',
    open: async () => ({ write: () => undefined, finalize: () => undefined, close: async () => undefined }),
  };
  const tts: TextToSpeech = {
    name: 'elevenlabs',
    async *synthesize() {
      yield { pcm: new Int16Array(160), sampleRate: 8000 };
    },
  };
  const llm = (usage?: { inputTokens: number; outputTokens: number }): LlmProvider => ({
    name: 'openai-compatible',
    complete: async () => ({ text: 'book', model: 'm', ...(usage ? { usage } : {}) }),
    async *stream(): AsyncGenerator<LlmStreamEvent> {
      yield { type: 'text', delta: 'Hi.' };
      yield { type: 'done', finishReason: 'stop', model: 'm', ...(usage ? { usage } : {}) };
    },
  });

  it('counts the audio written to a recognizer in ms, exactly across frames, per provider and model', async () => {
    const meter = new UsageMeter();
    const stream = await meter.stt(stt).open({ language: 'en-US', sampleRate: 8000, model: 'nova-2' }, { onTranscript: () => undefined, onError: () => undefined });
    // 3 frames of 20 ms plus an odd 10 samples (1.25 ms): whole ms only, the remainder carried.
    for (let i = 0; i < 3; i++) stream.write(new Int16Array(160));
    stream.write(new Int16Array(10));
    stream.write(new Int16Array(6));
    expect(meter.items()).toEqual([{ kind: 'stt_ms', provider: 'deepgram', model: 'nova-2', quantity: 62 }]);
  });

  it('adds the streams of one recognizer and model into one line, after the lines counted before', async () => {
    const meter = new UsageMeter();
    const handlers = { onTranscript: () => undefined, onError: () => undefined };
    meter.add('tts_characters', 'elevenlabs', 'flash', 5);
    const first = await meter.stt(stt).open({ language: 'en-US', sampleRate: 8000, model: 'nova-2' }, handlers);
    const second = await meter.stt(stt).open({ language: 'en-US', sampleRate: 8000, model: 'nova-2' }, handlers);
    // Half a ms each: only their sum makes a whole one.
    first.write(new Int16Array(4));
    second.write(new Int16Array(4));
    first.write(new Int16Array(160));

    expect(meter.items()).toEqual([
      { kind: 'tts_characters', provider: 'elevenlabs', model: 'flash', quantity: 5 },
      { kind: 'stt_ms', provider: 'deepgram', model: 'nova-2', quantity: 21 },
    ]);
  });

  it('counts the characters sent to a synthesizer and the tokens a model reports, streamed or whole; an answer without usage adds none', async () => {
    const meter = new UsageMeter();
    const ac = new AbortController();
    for await (const chunk of meter.tts(tts).synthesize({ text: 'Hello there.', language: 'en-US', model: 'flash', signal: ac.signal })) void chunk;
    const model = meter.llm(llm({ inputTokens: 120, outputTokens: 8 }));
    for (let i = 0; i < 2; i++) for await (const e of model.stream({ model: 'gpt-4o-mini', messages: [] })) void e;
    for await (const e of meter.llm(llm()).stream({ model: 'gpt-4o-mini', messages: [] })) void e;
    // A whole answer (a flow's intent routing) counts as well.
    await model.complete({ model: 'gpt-4o-mini', messages: [] });

    expect(meter.items()).toEqual([
      { kind: 'tts_characters', provider: 'elevenlabs', model: 'flash', quantity: 12 },
      { kind: 'llm_input_tokens', provider: 'openai-compatible', model: 'gpt-4o-mini', quantity: 360 },
      { kind: 'llm_output_tokens', provider: 'openai-compatible', model: 'gpt-4o-mini', quantity: 24 },
    ]);
    // Items are copies: the running totals are not changed by a reader.
    meter.items()[0].quantity = 0;
    expect(meter.items()[0].quantity).toBe(12);
  });
});
