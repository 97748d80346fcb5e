import { LocalTextToSpeech, mespeakVoiceFor, resolveMespeakVoice } from './local-tts';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest } from './text-to-speech';

const SENTENCE = 'Hello, how can I help you today?';

describe('LocalTextToSpeech (mespeak)', () => {
  const tts = new LocalTextToSpeech();
  const request = (overrides: Partial<SynthesisRequest> = {}): SynthesisRequest => ({
    text: SENTENCE,
    language: 'en-US',
    signal: new AbortController().signal,
    ...overrides,
  });

  beforeAll(() => tts.warmUp(['en-US']));
  afterAll(() => tts.close());

  it('speaks a sentence as audible 22050 Hz audio of plausible duration, in ~100 ms chunks', async () => {
    const chunks = await collect(tts.synthesize(request()));

    const pcm = concat(chunks);
    const seconds = pcm.length / 22050;
    expect(chunks.every((c) => c.sampleRate === 22050)).toBe(true);
    // Seven words at 175 words per minute, with eSpeak's pauses.
    expect(seconds).toBeGreaterThan(1.2);
    expect(seconds).toBeLessThan(4);
    expect(rms(pcm)).toBeGreaterThan(500);
    expect(chunks.slice(0, -1).every((c) => c.pcm.length === 2205)).toBe(true);
  });

  it('speaks faster and slower with the speed, and stays audible at another pitch', async () => {
    const normal = concat(await collect(tts.synthesize(request())));
    const fast = concat(await collect(tts.synthesize(request({ speed: 2 }))));
    const slow = concat(await collect(tts.synthesize(request({ speed: 0.6 }))));
    const high = concat(await collect(tts.synthesize(request({ pitch: 1.6 }))));

    expect(fast.length).toBeLessThan(normal.length * 0.75);
    expect(slow.length).toBeGreaterThan(normal.length * 1.3);
    expect(rms(high)).toBeGreaterThan(500);
    expect(high).not.toEqual(normal);
  });

  it('speaks other languages with their own voice', async () => {
    const french = concat(await collect(tts.synthesize(request({ text: 'Bonjour, comment puis-je vous aider ?', language: 'fr-FR' }))));

    expect(rms(french)).toBeGreaterThan(500);
  });

  it('stops between chunks once aborted', async () => {
    const controller = new AbortController();
    const received: SpeechChunk[] = [];

    const error = await collect(tts.synthesize(request({ signal: controller.signal })), (chunk) => {
      received.push(chunk);
      controller.abort();
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'aborted', provider: 'local' });
    expect(received).toHaveLength(1);
  });

  it('throws aborted without synthesizing when the signal has already fired', async () => {
    const controller = new AbortController();
    controller.abort();

    await expect(collect(tts.synthesize(request({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
  });

  it('yields nothing for blank text', async () => {
    await expect(collect(tts.synthesize(request({ text: '  ' })))).resolves.toEqual([]);
  });

  it('reads text starting with a dash as text, not as an eSpeak option', async () => {
    const pcm = concat(await collect(tts.synthesize(request({ text: '-v minus five degrees' }))));

    expect(rms(pcm)).toBeGreaterThan(500);
  });
});

describe('LocalTextToSpeech worker threads', () => {
  const request = (text: string): SynthesisRequest => ({ text, language: 'en-US', signal: new AbortController().signal });

  it('never loads mespeak on the calling thread', async () => {
    let pcm: Int16Array | undefined;
    await jest.isolateModulesAsync(async () => {
      jest.doMock('mespeak', () => {
        throw new Error('mespeak loaded on the main thread');
      });
      const { LocalTextToSpeech: Isolated } = await import('./local-tts');
      const tts = new Isolated();
      try {
        pcm = concat(await collect(tts.synthesize(request('Loaded elsewhere.'))));
      } finally {
        await tts.close();
      }
    });

    expect(rms(pcm ?? new Int16Array())).toBeGreaterThan(500);
  }, 30_000);

  it('replaces each worker after the configured number of lines, every line whole', async () => {
    const tts = new LocalTextToSpeech({ recycleAfter: 2 });
    try {
      const first = concat(await collect(tts.synthesize(request('Same line.'))));
      const lengths: number[] = [];
      for (let i = 0; i < 4; i++) lengths.push(concat(await collect(tts.synthesize(request('Same line.')))).length);

      expect(lengths).toEqual([first.length, first.length, first.length, first.length]);
      expect(tts.stats).toMatchObject({ recycled: 2, failed: 0 });
    } finally {
      await tts.close();
    }
    // Three workers start and load mespeak: seconds on a throttled machine.
  }, 60_000);

  it('refuses a recycling count the library would not survive', () => {
    expect(() => new LocalTextToSpeech({ recycleAfter: 80 })).toThrow(RangeError);
    expect(() => new LocalTextToSpeech({ workers: 0 })).toThrow(RangeError);
  });
});

describe('mespeak voice choice', () => {
  it('picks the voice by the language, with regional voices where mespeak ships them and en-us as fallback', () => {
    expect(mespeakVoiceFor('en-US')).toBe('en/en-us');
    expect(mespeakVoiceFor('en')).toBe('en/en-us');
    expect(mespeakVoiceFor('en-GB')).toBe('en/en');
    expect(mespeakVoiceFor('fr-CA')).toBe('fr');
    expect(mespeakVoiceFor('de-DE')).toBe('de');
    expect(mespeakVoiceFor('pt-PT')).toBe('pt-pt');
    expect(mespeakVoiceFor('pt-BR')).toBe('pt');
    expect(mespeakVoiceFor('es-ES')).toBe('es');
    expect(mespeakVoiceFor('es-MX')).toBe('es-la');
    expect(mespeakVoiceFor('zh-HK')).toBe('zh-yue');
    expect(mespeakVoiceFor('ja-JP')).toBe('en/en-us');
  });

  it('takes a voice id naming a shipped voice and variant, and ignores other vendors’ voice ids', () => {
    expect(resolveMespeakVoice('en/en-rp+f3', 'fr-FR')).toEqual({ voice: 'en/en-rp', variant: 'f3' });
    expect(resolveMespeakVoice('de', 'en-US')).toEqual({ voice: 'de' });
    expect(resolveMespeakVoice('21m00Tcm4TlvDq8ikWAM', 'fr-FR')).toEqual({ voice: 'fr' });
    expect(resolveMespeakVoice('ash', 'de-DE')).toEqual({ voice: 'de' });
    expect(resolveMespeakVoice('es-MX+f2', 'en-US')).toEqual({ voice: 'es-la', variant: 'f2' });
    expect(resolveMespeakVoice(undefined, 'it-IT')).toEqual({ voice: 'it' });
  });
});

async function collect(audio: AsyncIterable<SpeechChunk>, onChunk?: (chunk: SpeechChunk) => void): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of audio) {
    chunks.push(chunk);
    onChunk?.(chunk);
  }
  return chunks;
}

function concat(chunks: SpeechChunk[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.pcm.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c.pcm, at);
    at += c.pcm.length;
  }
  return out;
}

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}
