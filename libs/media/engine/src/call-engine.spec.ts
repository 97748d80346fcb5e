import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech, SpeechError } from '@parley/speech';
import { agentSettings, AgentSettings } from './agent-settings';
import { CallEngine, EngineTurn } from './call-engine';
import { ManualClock } from './clock';
import { AudioSink } from './playout';

const RATE = 8000;
const FRAME = 160;

/** A carrier seen from the engine: records what it was sent, plays at real time and echoes marks once played. */
class FakeCarrier implements AudioSink {
  readonly log: { at: number; kind: 'audio' | 'mark' | 'clear'; name?: string }[] = [];
  engine!: CallEngine;
  private playedUntil = 0;

  constructor(private readonly clock: ManualClock) {}

  sendAudio(): void {
    this.log.push({ at: this.clock.now(), kind: 'audio' });
    this.playedUntil = Math.max(this.playedUntil, this.clock.now()) + 20;
  }

  sendMark(name: string): void {
    this.log.push({ at: this.clock.now(), kind: 'mark', name });
    const cleared = this.clears;
    this.clock.setTimeout(() => cleared === this.clears && this.engine.onMark(name), this.playedUntil - this.clock.now());
  }

  sendClear(): void {
    this.log.push({ at: this.clock.now(), kind: 'clear' });
    this.playedUntil = this.clock.now();
  }

  get clears(): number {
    return this.log.filter((e) => e.kind === 'clear').length;
  }

  framesAfter(at: number): number {
    return this.log.filter((e) => e.kind === 'audio' && e.at > at).length;
  }
}

let syllable = 0;
/** Caller speech: a tone with a quiet 20 ms between syllables, as real speech has. */
const speech = () => {
  const amplitude = ++syllable % 5 === 0 ? 300 : 8000;
  const frame = new Int16Array(FRAME);
  for (let i = 0; i < FRAME; i++) frame[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / RATE));
  return frame;
};
const quiet = () => new Int16Array(FRAME);
const hiss = () => Int16Array.from({ length: FRAME }, (_, i) => (i % 2 ? 40 : -40));

function settings(overrides: Record<string, unknown> = {}, conversation: Record<string, unknown> = {}): AgentSettings {
  return agentSettings(
    {
      languages: [{ code: 'en-US', greeting: 'Hello {{name}}, this is Ada.', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1, ...conversation },
      ...overrides,
    },
    {},
    { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
  );
}

function setup(agent: AgentSettings, options: { llm?: FakeLlm; stt?: FakeSpeechToText[]; tts?: FakeTextToSpeech[] } = {}) {
  const clock = new ManualClock();
  const carrier = new FakeCarrier(clock);
  const turns: EngineTurn[] = [];
  const hangups: string[] = [];
  const transfers: string[] = [];
  const stt = options.stt ?? [new FakeSpeechToText()];
  const tts = options.tts ?? [new FakeTextToSpeech()];
  const llm = options.llm ?? new FakeLlm();
  const engine = new CallEngine(
    agent,
    { stt, tts, llm },
    {
      sink: carrier,
      clock,
      onTurn: (t) => void turns.push(t),
      hangup: (r) => void hangups.push(r),
      transfer: async (d) => void transfers.push(d),
    },
    { sampleRate: RATE, variables: { name: 'Sam' }, marksEchoed: true },
  );
  carrier.engine = engine;
  /** Feeds `ms` of caller audio in 20 ms frames, advancing the clock as a carrier would. */
  const feed = async (ms: number, frame: () => Int16Array) => {
    for (let t = 0; t < ms; t += 20) {
      engine.pushAudio(frame());
      await clock.advance(20);
    }
  };
  return { clock, carrier, turns, hangups, transfers, stt, tts, llm, engine, feed };
}

describe('conversation engine', () => {
  it('speaks the greeting exactly as written, with variables, when the call opens', async () => {
    const { engine, clock, turns, tts, carrier } = setup(settings());
    const started = engine.start();
    await clock.advance(5000);
    await started;
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Hello Sam, this is Ada.']);
    expect(carrier.log.filter((e) => e.kind === 'audio').length).toBeGreaterThan(40);
    expect(turns).toEqual([expect.objectContaining({ role: 'assistant', text: 'Hello Sam, this is Ada.', interrupted: false, startMs: 0 })]);
  });

  it('paces outbound audio one frame per 20 ms', async () => {
    const { engine, clock, carrier } = setup(settings());
    void engine.start();
    await clock.advance(3000);
    const times = carrier.log.filter((e) => e.kind === 'audio').map((e) => e.at);
    const gaps = times.slice(3).map((t, i) => t - times[i + 2]);
    expect(new Set(gaps)).toEqual(new Set([20]));
  });

  it('answers a caller’s turn with the model’s reply, sentence by sentence', async () => {
    const llm = new FakeLlm(['We open at nine. We close at five every weekday.']);
    const { engine, clock, turns, stt, tts, feed } = setup(settings(), { llm });
    void engine.start();
    await clock.advance(3000);
    stt[0].queue('When do you open?');
    await feed(400, speech);
    await feed(700, quiet);
    await clock.advance(5000);
    expect(turns.map((t) => [t.role, t.text])).toEqual([
      ['assistant', 'Hello Sam, this is Ada.'],
      ['user', 'When do you open?'],
      ['assistant', 'We open at nine. We close at five every weekday.'],
    ]);
    expect(tts[0].syntheses.map((s) => s.request.text).slice(1)).toEqual(['We open at nine.', 'We close at five every weekday.']);
    expect(llm.requests[0].messages).toEqual([
      { role: 'system', content: 'You are Ada.' },
      { role: 'assistant', content: 'Hello Sam, this is Ada.' },
      { role: 'user', content: 'When do you open?' },
    ]);
  });

  it('stops every stage at once on barge-in: clear sent, no frame after it, the turn cut to what was heard', async () => {
    const long = 'Our opening hours are long and detailed. ' + 'We are open on many days of the week and at many times. '.repeat(4);
    const llm = new FakeLlm([long]);
    const { engine, clock, turns, stt, tts, carrier, feed } = setup(settings({ languages: [{ code: 'en-US', tts_provider: 'fake-tts', stt_provider: 'fake-stt' }] }), { llm });
    void engine.start();
    stt[0].queue('Tell me your hours');
    await feed(400, speech);
    await feed(700, quiet);
    await clock.advance(2000); // two seconds into a long answer
    stt[0].emit({ type: 'partial', text: 'no wait' });
    await clock.advance(0);
    const clearAt = carrier.log.find((e) => e.kind === 'clear')?.at;
    expect(clearAt).toBeDefined();
    await clock.advance(3000);
    expect(carrier.framesAfter(clearAt as number)).toBe(0);
    const answer = turns.find((t) => t.role === 'assistant' && t.interrupted);
    expect(answer).toBeDefined();
    expect(long.startsWith(answer?.text ?? 'x')).toBe(true);
    expect(answer!.text.length).toBeGreaterThan(10);
    expect(answer!.text.length).toBeLessThan(long.length / 2);
    expect(tts[0].syntheses.some((s) => s.outcome === 'aborted') || tts[0].syntheses.every((s) => s.outcome === 'completed')).toBe(true);
  });

  it('keeps talking over fewer words than interrupt_words, and stops at the threshold', async () => {
    const llm = new FakeLlm(['This is a fairly long answer that takes a while to read out loud.']);
    const { engine, clock, stt, carrier, feed } = setup(settings({}, { interrupt_words: 3 }), { llm });
    void engine.start();
    await clock.advance(3000);
    stt[0].queue('Question');
    await feed(200, speech);
    await feed(600, quiet);
    await clock.advance(500);
    stt[0].emit({ type: 'partial', text: 'uh huh' });
    await clock.advance(100);
    expect(carrier.clears).toBe(0);
    stt[0].emit({ type: 'partial', text: 'uh huh right' });
    await clock.advance(0);
    expect(carrier.clears).toBe(1);
  });

  it('does not take the tail of the caller’s own question for talking over the answer', async () => {
    const llm = new FakeLlm(['Here is a fairly long answer to your question. It goes on for a while.']);
    const { engine, clock, stt, carrier, feed, turns } = setup(settings(), { llm });
    void engine.start();
    await clock.advance(3000);
    // A 1.4 s question whose end the recognizer reports before the VAD's own hangover is over.
    await feed(1400, speech);
    stt[0].emit({ type: 'final', text: 'Can you tell me everything about your opening hours please', endOfTurn: true });
    await feed(600, quiet);
    await clock.advance(4000);
    expect(carrier.clears).toBe(0);
    expect(turns.at(-1)).toMatchObject({ role: 'assistant', interrupted: false });
  });

  it('interrupts a caller who keeps talking over the answer for 1.5 s, words or not', async () => {
    const llm = new FakeLlm(['Here is a fairly long answer to your question. It goes on for a while and then some more.']);
    const { engine, clock, stt, carrier, feed } = setup(settings({}, { interrupt_words: 10 }), { llm });
    void engine.start();
    await clock.advance(3000);
    stt[0].queue('Question');
    await feed(300, speech);
    await feed(700, quiet);
    await clock.advance(300);
    await feed(1400, speech);
    expect(carrier.clears).toBe(0);
    await feed(200, speech);
    expect(carrier.clears).toBe(1);
  });

  it('lets a stop word interrupt on its own', async () => {
    const llm = new FakeLlm(['This is a fairly long answer that takes a while to read out loud.']);
    const { engine, clock, stt, carrier, feed } = setup(settings({}, { interrupt_words: 5 }), { llm });
    void engine.start();
    await clock.advance(3000);
    stt[0].queue('Question');
    await feed(200, speech);
    await feed(600, quiet);
    await clock.advance(500);
    stt[0].emit({ type: 'partial', text: 'stop' });
    await clock.advance(0);
    expect(carrier.clears).toBe(1);
  });

  it('prompts a quiet caller, then says goodbye and hangs up at the configured times; line noise is not speech', async () => {
    const { engine, clock, tts, turns, hangups, feed } = setup(settings({}, { silence_prompt_seconds: 3, silence_hangup_seconds: 6 }));
    const spokenAt: [string, number][] = [];
    const synthesize = tts[0].synthesize.bind(tts[0]);
    tts[0].synthesize = (request) => (spokenAt.push([request.text, clock.now()]), synthesize(request));
    void engine.start();
    await feed(12_000, hiss);
    const greetingEnd = turns[0].endMs;
    expect(spokenAt.map(([text]) => text)).toEqual(['Hello Sam, this is Ada.', 'Are you still there?', 'Goodbye.']);
    // Within one 20 ms frame of the configured times, counted from the end of the greeting.
    expect(Math.abs(spokenAt[1][1] - greetingEnd - 3000)).toBeLessThanOrEqual(20);
    expect(Math.abs(spokenAt[2][1] - greetingEnd - 6000)).toBeLessThanOrEqual(20);
    expect(hangups).toEqual(['silence']);
  });

  it('counts the quiet from the caller’s last words', async () => {
    const { engine, clock, tts, feed } = setup(settings({}, { silence_prompt_seconds: 3, silence_hangup_seconds: 6 }));
    void engine.start();
    await clock.advance(2500);
    await feed(300, speech); // the caller says something the recognizer makes nothing of
    await feed(2800, quiet);
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Hello Sam, this is Ada.']);
    await feed(800, quiet);
    expect(tts[0].syntheses.map((s) => s.request.text)).toContain('Are you still there?');
  });

  it('ends the call with a goodbye at max_call_seconds', async () => {
    const { engine, clock, hangups, tts } = setup(settings({}, { max_call_seconds: 30 }));
    void engine.start();
    await clock.advance(29_000);
    expect(hangups).toEqual([]);
    await clock.advance(1_000);
    expect(tts[0].syntheses.at(-1)?.request.text).toBe('Goodbye.');
    await clock.advance(3_000);
    expect(hangups).toEqual(['max_duration']);
  });

  it('falls back to the next synthesizer within the turn when the first fails', async () => {
    const broken = new FakeTextToSpeech({ name: 'fake-tts' }).failNext(new SpeechError('boom', { code: 'http', provider: 'fake-tts', status: 500 }));
    const spare = new FakeTextToSpeech({ name: 'spare-tts' });
    const { engine, clock, turns, carrier } = setup(settings(), { tts: [broken, spare] });
    void engine.start();
    await clock.advance(3000);
    expect(spare.syntheses.map((s) => s.request.text)).toEqual(['Hello Sam, this is Ada.']);
    expect(carrier.log.filter((e) => e.kind === 'audio').length).toBeGreaterThan(40);
    expect(turns[0].text).toBe('Hello Sam, this is Ada.');
  });

  it('falls back to the next recognizer when the first cannot be opened', async () => {
    const broken = new FakeSpeechToText({ name: 'fake-stt' }).failNextOpen(new SpeechError('down', { code: 'connection', provider: 'fake-stt' }));
    const spare = new FakeSpeechToText({ name: 'spare-stt' });
    const { engine, clock, feed, turns } = setup(settings(), { stt: [broken, spare], llm: new FakeLlm(['Sure.']) });
    void engine.start();
    await clock.advance(3000);
    spare.queue('Hello?');
    await feed(300, speech);
    await feed(700, quiet);
    await clock.advance(2000);
    expect(turns.map((t) => t.text)).toContain('Hello?');
  });
});

describe('keypad and normal modes', () => {
  const menu = {
    mode: 'keypad',
    no_input: 'Sorry, I did not get that.',
    keypad_timeout_seconds: 3,
    max_no_input: 2,
    flow: {
      start: 'menu',
      nodes: [
        {
          id: 'menu',
          type: 'static',
          say: 'Press 1 for sales, 2 for support.',
          edges: [
            { to: 'sales', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '1' }] } },
            { to: 'support', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '2' }] } },
          ],
        },
        { id: 'sales', type: 'static', say: 'Connecting you to sales.' },
        { id: 'support', type: 'static', say: 'Support is open nine to five.' },
      ],
    },
  };

  it('reads the menu and follows the key pressed, with no recognizer or model', async () => {
    const { engine, clock, tts, stt, turns, hangups } = setup(settings(menu));
    void engine.start();
    await clock.advance(500);
    engine.pushDtmf('2');
    await clock.advance(5000);
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Press 1 for sales, 2 for support.', 'Support is open nine to five.']);
    expect(stt[0].streams).toHaveLength(0);
    expect(turns.filter((t) => t.role === 'user').map((t) => t.text)).toEqual(['2']);
    expect(hangups).toEqual(['completed']);
  });

  it('repeats the menu after no_input and hangs up after max_no_input silent rounds', async () => {
    const { engine, clock, tts, hangups } = setup(settings(menu));
    void engine.start();
    await clock.advance(30_000);
    const texts = tts[0].syntheses.map((s) => s.request.text);
    expect(texts.filter((t) => t === 'Sorry, I did not get that.')).toHaveLength(1);
    expect(texts.filter((t) => t.startsWith('Press 1'))).toHaveLength(2);
    expect(texts.at(-1)).toBe('Goodbye.');
    expect(hangups).toEqual(['no_input']);
  });

  it('normal mode reads the greeting and puts the caller through to transfer_number', async () => {
    const agent = agentSettings(
      { mode: 'normal', languages: [{ code: 'en-US', greeting: 'Putting you through.' }] },
      { transfer_number: '+15550100999' },
      { model: 'm', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    );
    const { engine, clock, transfers, stt } = setup(agent);
    void engine.start();
    await clock.advance(5000);
    expect(transfers).toEqual(['+15550100999']);
    expect(stt[0].streams).toHaveLength(0);
  });
});
