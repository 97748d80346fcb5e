import { FakeTextToSpeech } from '@parley/speech';
import { ManualClock } from './clock';
import { AudioSink, Playout } from './playout';
import { FLUSH, SpeechHandle, Spoken } from './speech-handle';

/** About 4.5 s of speech: synthesis is still being read 1 s in (it runs 1.5 s ahead of playback). */
const LONG = 'This is the first sentence of a long answer that goes on and on, for quite a while longer.';

function rig(tts = new FakeTextToSpeech()) {
  const clock = new ManualClock();
  const sent: { at: number; kind: 'audio' | 'clear' }[] = [];
  const sink: AudioSink = {
    sendAudio: () => void sent.push({ at: clock.now(), kind: 'audio' }),
    sendMark: () => undefined,
    sendClear: () => void sent.push({ at: clock.now(), kind: 'clear' }),
  };
  const playout = new Playout(sink, clock, 8000, false);
  const handle = new SpeechHandle(
    { playout, clock, sampleRate: 8000, synthesize: (text, signal) => tts.synthesize({ text, language: 'en-US', signal }), log: () => undefined },
    true,
    0,
  );
  return { clock, sent, handle, tts };
}

describe('SpeechHandle', () => {
  it('speaks streamed text sentence by sentence and resolves once all of it was heard', async () => {
    const { clock, handle, tts } = rig();
    async function* text(): AsyncIterable<Spoken> {
      yield 'We open at nine. We close ';
      yield 'at five every weekday.';
    }
    let done = false;
    void handle.run(text()).then(() => (done = true));
    await clock.advance(1000);
    expect(tts.syntheses.map((s) => s.request.text)).toEqual(['We open at nine.', 'We close at five every weekday.']);
    expect(done).toBe(false);
    await clock.advance(5000);
    expect(done).toBe(true);
    expect(handle.heardText()).toBe('We open at nine. We close at five every weekday.');
  });

  it('synthesizes what is pending at a flush, before the rest of the text comes', async () => {
    const { clock, handle, tts } = rig();
    let release!: () => void;
    const later = new Promise<void>((r) => (release = r));
    async function* text(): AsyncIterable<Spoken> {
      yield 'One moment';
      yield FLUSH;
      await later;
      yield 'It has shipped.';
    }
    void handle.run(text());
    await clock.advance(100);
    expect(tts.syntheses.map((s) => s.request.text)).toEqual(['One moment']);
    release();
    await clock.advance(100);
    expect(tts.syntheses.map((s) => s.request.text)).toEqual(['One moment', 'It has shipped.']);
  });

  it('interrupt() stops generation, synthesis and playout at once, and keeps only the words heard', async () => {
    const { clock, sent, handle, tts } = rig();
    let generating = true;
    async function* text(signal: AbortSignal): AsyncIterable<Spoken> {
      yield `${LONG} `;
      while (!signal.aborted) await new Promise<void>((r) => clock.setTimeout(r, 50));
      generating = false;
    }
    const running = handle.run(text(handle.signal));
    await clock.advance(1000);
    handle.interrupt();
    const clearAt = clock.now();
    await clock.advance(3000);
    await running;
    expect(generating).toBe(false);
    expect(tts.syntheses[0].outcome).toBe('aborted');
    expect(sent.filter((e) => e.kind === 'clear')).toHaveLength(1);
    expect(sent.filter((e) => e.kind === 'audio' && e.at > clearAt)).toHaveLength(0);
    expect(handle.interrupted).toBe(true);
    const heard = handle.heardText();
    expect(heard.length).toBeGreaterThan(5);
    expect(LONG.startsWith(heard)).toBe(true);
    expect(heard.length).toBeLessThan(LONG.length / 2);
  });
});
