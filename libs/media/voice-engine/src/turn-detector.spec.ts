import { FakeSpeechToText } from '@parley/speech';
import { ManualClock } from './clock';
import { AgentFloor, TurnDetector, UserTurn } from './turn-detector';
import { Vad, VadEvent } from './vad';

const FRAME = 160;
let syllable = 0;
/** Caller speech: a tone with a quiet 20 ms between syllables (the VAD's floor needs quieter moments). */
const speech = () => {
  const amplitude = ++syllable % 5 === 0 ? 300 : 8000;
  return Int16Array.from({ length: FRAME }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 8000)));
};
const quiet = () => new Int16Array(FRAME);

async function rig(options: { interruptWords?: number; interruptPhrases?: string[]; vad?: Vad } = {}) {
  const clock = new ManualClock();
  const stt = new FakeSpeechToText();
  const events: string[] = [];
  const turns: UserTurn[] = [];
  const bargeIns: string[] = [];
  let agent: AgentFloor | undefined;
  const detector = new TurnDetector({
    clock,
    sampleRate: 8000,
    interruptWords: options.interruptWords ?? 3,
    interruptPhrases: options.interruptPhrases ?? [],
    vad: options.vad,
    agent: () => agent,
    onSpeechStart: () => void events.push('start'),
    onSpeechEnd: () => void events.push('end'),
    onBargeIn: (why) => {
      bargeIns.push(why);
      agent = undefined;
    },
    onUserTurn: (t) => void turns.push(t),
    onLanguage: (l) => void events.push(`language ${l}`),
    log: () => undefined,
  });
  await detector.open(stt, 'en-US');
  const feed = async (ms: number, frame: () => Int16Array) => {
    for (let t = 0; t < ms; t += 20) {
      detector.push(frame());
      await clock.advance(20);
    }
  };
  const speak = (firstAudioAt = clock.now()) => (agent = { interruptible: true, firstAudioAt });
  return { clock, stt, detector, events, turns, bargeIns, feed, speak };
}

describe('TurnDetector', () => {
  it('hears the caller through the VAD it is given', async () => {
    const said: VadEvent[] = ['speech_start', undefined, 'speech_end'];
    const pushed: number[] = [];
    const vad: Vad = {
      speaking: false,
      push: (frame, ms) => {
        pushed.push(ms);
        return said.shift();
      },
    };
    const { events, feed } = await rig({ vad });

    await feed(60, quiet);

    expect(events).toEqual(['start', 'end']);
    expect(pushed).toEqual([20, 20, 20]);
  });

  it('hands over the caller’s turn when the recognizer ends it, timed from the VAD’s end of speech', async () => {
    const { stt, events, turns, feed } = await rig();
    stt.queue('When do you open?');
    await feed(400, speech);
    await feed(700, quiet);
    expect(events).toEqual(['start', 'end']);
    expect(turns).toEqual([{ text: 'When do you open?', startedAt: expect.any(Number), endOfSpeech: expect.any(Number) }]);
    // Speech from the first frames to 400 ms; the VAD ends it after its 500 ms hangover.
    expect(turns[0].startedAt).toBeLessThan(200);
    expect(turns[0].endOfSpeech).toBeGreaterThanOrEqual(840);
    expect(turns[0].endOfSpeech).toBeLessThanOrEqual(920);
  });

  it('takes a final heard while the agent keeps the floor for a backchannel, not a turn', async () => {
    const { stt, turns, bargeIns, speak, clock } = await rig({ interruptWords: 3 });
    speak();
    stt.emit({ type: 'final', text: 'mm-hm', endOfTurn: true });
    await clock.advance(20);
    expect(bargeIns).toEqual([]);
    expect(turns).toEqual([]);
  });

  it('interrupts on enough words, on a stop word, and on an interrupt phrase; the interrupting final is a turn', async () => {
    const { stt, turns, bargeIns, speak } = await rig({ interruptWords: 3, interruptPhrases: ['Hang on'] });
    speak();
    stt.emit({ type: 'partial', text: 'uh huh' });
    expect(bargeIns).toEqual([]);
    stt.emit({ type: 'partial', text: 'uh huh right' });
    speak();
    stt.emit({ type: 'partial', text: 'stop' });
    speak();
    stt.emit({ type: 'final', text: 'hang on', endOfTurn: true });
    expect(bargeIns).toEqual(['caller words', 'caller words', 'interrupt phrase']);
    expect(turns.map((t) => t.text)).toEqual(['hang on']);
  });

  it('interrupts a caller talking over the agent’s audio for 1.5 s, words or not', async () => {
    const { bargeIns, feed, speak } = await rig({ interruptWords: 10 });
    speak();
    await feed(1500, speech);
    expect(bargeIns).toEqual([]);
    await feed(200, speech);
    expect(bargeIns).toEqual(['kept talking']);
  });

  it('feeds the recognizer the caller’s audio unchanged, each frame as it comes from speech start to its end', async () => {
    const { stt, events, detector } = await rig();
    const [recognizer] = stt.streams;
    const pushed: Int16Array[] = [];
    /** Per frame pushed: the sizes of the recognizer's writes it caused, and the VAD's change, if any. */
    const steps: Array<{ writes: number[]; event?: string }> = [];
    const push = (ms: number, frame: () => Int16Array) => {
      for (let t = 0; t < ms; t += 20) {
        const [written, heard] = [recognizer.frames.length, events.length];
        pushed.push(frame());
        detector.push(pushed[pushed.length - 1]);
        steps.push({ writes: recognizer.frames.slice(written).map((f) => f.length), event: events[heard] });
      }
    };

    push(1000, quiet);
    push(600, speech);
    push(2000, quiet);
    const beforeClose = recognizer.frames.length;
    await detector.close();
    const onClose = recognizer.frames.slice(beforeClose).map((f) => f.length);

    const start = steps.findIndex((s) => s.event === 'start');
    const end = steps.findIndex((s) => s.event === 'end');
    expect(start).toBeGreaterThanOrEqual(50);
    expect(end).toBeGreaterThan(start + 25);
    const piecesOf = (frames: number) => [...Array(Math.floor(frames / 13)).fill(13 * FRAME), ...(frames % 13 ? [(frames % 13) * FRAME] : [])];
    // Quiet before: 250 ms pieces, what is left written ahead of the frame that started speech.
    expect(steps.slice(0, start).flatMap((s) => s.writes)).toEqual(piecesOf(start));
    // From the speech start to the VAD's end of speech (500 ms after the last words), each frame as it comes: the
    // end's own frame is held, then written as finalize() flushes.
    expect(steps.slice(start, end + 1).map((s) => s.writes)).toEqual(Array(end + 1 - start).fill([FRAME]));
    // Then quiet again: held, and what is left written on close.
    expect([...steps.slice(end + 1).flatMap((s) => s.writes), ...onClose]).toEqual(piecesOf(pushed.length - end - 1));
    expect(Buffer.concat(recognizer.frames.map((f) => Buffer.from(f.buffer, f.byteOffset, f.byteLength)))).toEqual(
      Buffer.concat(pushed.map((f) => Buffer.from(f.buffer, f.byteOffset, f.byteLength))),
    );
  });

  it('reports the language of a final transcript', async () => {
    const { stt, events } = await rig();
    stt.emit({ type: 'final', text: 'Bonjour', endOfTurn: false, language: 'fr' });
    expect(events).toEqual(['language fr']);
  });
});
