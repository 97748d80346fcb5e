import { EnergySpeechDetector, FakeSpeechToText } from './fake-stt';
import { SpeechError } from './speech-error';
import { SttEvent } from './speech-to-text';

const RATE = 8000;

function audio(kind: 'tone' | 'silence', ms: number, amplitude = 8000): Int16Array {
  const n = (RATE * ms) / 1000;
  return Int16Array.from({ length: n }, (_, i) => (kind === 'tone' ? Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / RATE)) : 0));
}

/** Splits audio into 20 ms frames, as the engine writes them. */
function framesOf(...parts: Int16Array[]): Int16Array[] {
  const all = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const out: Int16Array[] = [];
  for (let i = 0; i < all.length; i += RATE / 50) out.push(all.subarray(i, i + RATE / 50));
  return out;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('FakeSpeechToText', () => {
  let events: SttEvent[];
  let errors: SpeechError[];
  const handlers = () => ({ onTranscript: (e: SttEvent) => events.push(e), onError: (e: SpeechError) => errors.push(e) });

  beforeEach(() => {
    events = [];
    errors = [];
  });

  it('records the streams it opens and the frames written to them', async () => {
    const stt = new FakeSpeechToText();
    const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());
    const frame = audio('tone', 20);

    stream.write(frame);
    stream.write(frame);
    frame[0] = 1234;

    expect(stt.name).toBe('fake-stt');
    expect(stt.streams).toHaveLength(1);
    expect(stt.current?.options).toEqual({ language: 'en-US', sampleRate: RATE });
    expect(stt.current?.frames).toHaveLength(2);
    expect(stt.current?.frames[0][0]).not.toBe(1234);
    expect(stt.current?.samples).toBe(320);
  });

  it('answers each finalize with the next queued text as a final end of turn, after the call returns', async () => {
    const stt = new FakeSpeechToText({ name: 'deepgram' }).queue('Hello.', 'Goodbye.');
    const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

    stream.finalize();
    expect(events).toEqual([]);
    await flush();
    stream.finalize();
    stream.finalize();
    await flush();

    expect(stt.name).toBe('deepgram');
    expect(events).toEqual([
      { type: 'final', text: 'Hello.', endOfTurn: true },
      { type: 'final', text: 'Goodbye.', endOfTurn: true },
      { type: 'final', text: '', endOfTurn: true },
    ]);
    expect(stt.current?.finalizeCount).toBe(3);
    expect(stt.pending).toBe(0);
  });

  it('emit pushes an event to the current stream at once', async () => {
    const stt = new FakeSpeechToText();
    await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

    stt.emit({ type: 'partial', text: 'I want' });
    stt.emit({ type: 'final', text: 'I want a refund', endOfTurn: false, language: 'en' });

    expect(events).toEqual([
      { type: 'partial', text: 'I want' },
      { type: 'final', text: 'I want a refund', endOfTurn: false, language: 'en' },
    ]);
    expect(stt.current?.events).toEqual(events);
  });

  it('delivers nothing after close, and refuses to emit to a closed stream', async () => {
    const stt = new FakeSpeechToText().queue('late');
    const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

    stream.finalize();
    await stream.close();
    await flush();
    stream.write(audio('tone', 20));

    expect(events).toEqual([]);
    expect(stt.current?.closed).toBe(true);
    expect(stt.current?.frames).toEqual([]);
    expect(() => stt.emit({ type: 'partial', text: 'x' })).toThrow(/no open stream/);
  });

  it('failNextOpen makes one open reject', async () => {
    const stt = new FakeSpeechToText({ name: 'deepgram' }).failNextOpen();

    await expect(stt.open({ language: 'en-US', sampleRate: RATE }, handlers())).rejects.toMatchObject({
      name: 'SpeechError',
      code: 'connection',
      provider: 'deepgram',
    });
    await expect(stt.open({ language: 'en-US', sampleRate: RATE }, handlers())).resolves.toBeDefined();

    const custom = new SpeechError('bad key', { code: 'http', status: 401, provider: 'deepgram' });
    stt.failNextOpen(custom);
    await expect(stt.open({ language: 'en-US', sampleRate: RATE }, handlers())).rejects.toBe(custom);
    expect(stt.streams).toHaveLength(1);
  });

  it('failStream reports the error on the current stream and closes it', async () => {
    const stt = new FakeSpeechToText().queue('never');
    const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

    stt.failStream();
    stream.finalize();
    await flush();

    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'connection', provider: 'fake-stt' });
    expect(events).toEqual([]);
    expect(stt.current?.closed).toBe(true);
  });

  describe('with autoDetect', () => {
    it('ends the turn on its own after a burst of speech and enough silence', async () => {
      const stt = new FakeSpeechToText({ autoDetect: true }).queue('Book a table for two.', 'At seven.');
      const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

      for (const frame of framesOf(audio('silence', 200), audio('tone', 300), audio('silence', 280))) stream.write(frame);
      expect(events).toEqual([]);
      for (const frame of framesOf(audio('silence', 40))) stream.write(frame);
      expect(events).toEqual([{ type: 'final', text: 'Book a table for two.', endOfTurn: true }]);

      for (const frame of framesOf(audio('tone', 150), audio('silence', 400))) stream.write(frame);
      expect(events.map((e) => e.type === 'final' && e.text)).toEqual(['Book a table for two.', 'At seven.']);
    });

    it('ignores clicks shorter than 100 ms and sound below the threshold', async () => {
      const stt = new FakeSpeechToText({ autoDetect: { threshold: 2000 } }).queue('unused');
      const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

      for (const frame of framesOf(audio('tone', 80), audio('silence', 400), audio('tone', 500, 1000), audio('silence', 400))) {
        stream.write(frame);
      }

      expect(events).toEqual([]);
      expect(stt.pending).toBe(1);
    });

    it('finalize settles the speech in progress with the next text', async () => {
      const stt = new FakeSpeechToText({ autoDetect: true }).queue('Wait.');
      const stream = await stt.open({ language: 'en-US', sampleRate: RATE }, handlers());

      for (const frame of framesOf(audio('tone', 200))) stream.write(frame);
      stream.finalize();
      await flush();
      for (const frame of framesOf(audio('silence', 400))) stream.write(frame);

      expect(events).toEqual([{ type: 'final', text: 'Wait.', endOfTurn: true }]);
    });
  });
});

describe('EnergySpeechDetector', () => {
  it('reports where speech starts and ends, in ms of audio', () => {
    const detector = new EnergySpeechDetector(RATE);
    const starts: number[] = [];

    const segments = framesOf(audio('silence', 100), audio('tone', 250), audio('silence', 350)).flatMap((f) =>
      detector.push(f, (at) => starts.push(at)),
    );

    expect(starts).toEqual([100]);
    expect(segments).toEqual([{ startMs: 100, endMs: 350 }]);
    expect(detector.inSpeech).toBe(false);
    expect(detector.timeMs).toBe(700);
  });

  it('keeps a segment open through pauses shorter than the silence needed', () => {
    const detector = new EnergySpeechDetector(RATE, { minSilenceMs: 200 });

    const segments = framesOf(audio('tone', 150), audio('silence', 150), audio('tone', 150), audio('silence', 200)).flatMap((f) => detector.push(f));

    expect(segments).toEqual([{ startMs: 0, endMs: 450 }]);
  });

  it('flush ends the segment in progress', () => {
    const detector = new EnergySpeechDetector(16_000);

    // 1600 samples: 100 ms at 16 kHz.
    detector.push(audio('tone', 200));
    expect(detector.inSpeech).toBe(true);

    expect(detector.flush()).toEqual({ startMs: 0, endMs: 100 });
    expect(detector.flush()).toBeUndefined();
  });
});
