import { register } from 'prom-client';
import { parseEgressAllowlist } from '@parley/egress';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech, SpeechChunk, SpeechError, SynthesisRequest, TextToSpeech } from '@parley/speech';
import type { EffectiveConfig, RegisteredFunction, ToolConfigInput } from '@parley/contracts';
import { agentSettings, AgentSettings, RuntimeTools } from './agent-settings';
import { VoiceEngine, EngineHost, EngineOptions, EngineTurn } from './voice-engine';
import { FakeCarrier, hiss, quiet, RATE, settings, setup, speech } from './testing/engine-harness';
import { ToolCallReport } from './tool-runner';
import { ManualClock } from './clock';
import { LineCache } from './line-cache';
import { engineMetrics } from './metrics';
import { FakeCalCom } from './testing/fake-calcom';
import { ToolServer } from './testing/tool-server';

describe('voice engine', () => {
  it('speaks the greeting exactly as written, with variables, when the call opens', async () => {
    const { engine, clock, turns, tts, carrier } = setup(settings());
    const started = engine.start();
    await clock.advance(5000);
    await started;
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Hello Sam, this is Ada.']);
    expect(carrier.log.filter((e) => e.kind === 'audio').length).toBeGreaterThan(40);
    expect(turns).toEqual([expect.objectContaining({ role: 'assistant', text: 'Hello Sam, this is Ada.', interrupted: false, startMs: 0 })]);
  });

  it('counts turn offsets from the start it is given (the media stream opened before the engine existed)', async () => {
    const { engine, clock, turns } = setup(settings(), { engine: { startedAt: -250 } });
    const started = engine.start();
    await clock.advance(5000);
    await started;
    expect(turns).toEqual([expect.objectContaining({ text: 'Hello Sam, this is Ada.', startMs: 250 })]);
    expect(turns[0].endMs).toBeGreaterThan(250 + 1000);
  });

  it('paces outbound audio one frame per 20 ms', async () => {
    const { engine, clock, carrier } = setup(settings());
    void engine.start();
    await clock.advance(3000);
    const times = carrier.log.filter((e) => e.kind === 'audio').map((e) => e.at);
    const gaps = times.slice(3).map((t, i) => t - times[i + 2]);
    expect(new Set(gaps)).toEqual(new Set([20]));
  });

  it('reads a synthesizer faster than real time only as playback makes room: about 1.5 s ahead, never the whole answer', async () => {
    // 20 s of audio for one sentence, offered as fast as it is read, in 100 ms chunks.
    const tts = new FakeTextToSpeech({ msPerChar: 400, chunkMs: 100 });
    const llm = new FakeLlm(['This sentence lasts twenty seconds when spoken aloud, no less.']);
    const { engine, clock, stt, carrier, feed } = setup(settings({ languages: [{ code: 'en-US', tts_provider: 'fake-tts', stt_provider: 'fake-stt' }] }), {
      llm,
      tts: [tts],
    });
    void engine.start();
    stt[0].queue('Tell me everything');
    await feed(400, speech);
    await feed(700, quiet);
    const answer = () => tts.syntheses.at(-1)!;
    const sent = () => carrier.log.filter((e) => e.kind === 'audio').length;

    await clock.advance(3000);
    // Read ≈ played + 1.5 s lookahead (+ one chunk in hand), nowhere near the 200 chunks on offer.
    expect(answer().chunks).toBeGreaterThanOrEqual(Math.floor((sent() * 20) / 100) + 14);
    expect(answer().chunks).toBeLessThanOrEqual(Math.ceil((sent() * 20) / 100) + 17);
    await clock.advance(5000);
    expect(answer().chunks).toBeLessThanOrEqual(Math.ceil((sent() * 20) / 100) + 17);
    expect(answer().outcome).toBe('streaming');

    // A barge-in releases the waiting reader and the synthesis is aborted.
    stt[0].emit({ type: 'partial', text: 'stop right there' });
    await clock.advance(100);
    expect(answer().outcome).toBe('aborted');
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

  it('reports an answer with its response latency: the caller’s end of speech to the answer’s first audio (the greeting has none)', async () => {
    const llm = new FakeLlm(['We open at nine.']);
    const { engine, clock, turns, stt, feed } = setup(settings(), { llm });
    void engine.start();
    await clock.advance(3000);
    // The VAD's hangover ends the caller's speech; the recognizer's final comes 600 ms of quiet later.
    await feed(800, speech);
    await feed(600, quiet);
    stt[0].emit({ type: 'final', text: 'When do you open?', endOfTurn: true });
    await clock.advance(5000);
    expect(turns.map((t) => [t.role, t.responseLatencyMs])).toEqual([
      ['assistant', undefined],
      ['user', undefined],
      ['assistant', expect.any(Number)],
    ]);
    // The wait for the recognizer's final (the fakes answer at once): more than nothing, less than the quiet.
    expect(turns[2].responseLatencyMs).toBeGreaterThan(0);
    expect(turns[2].responseLatencyMs).toBeLessThanOrEqual(600);
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

  it('times each turn’s stages from its own end of speech, also when the recognizer ends the turn before the VAD', async () => {
    // What /metrics exposes, read through prom-client's registry: each stage's sum of seconds and count.
    const observed = async () => {
      const values = (await register.getSingleMetric('parley_engine_stage_latency_seconds')!.get()).values;
      const read = (stage: string, suffix: string) =>
        values.find((v) => v.labels['stage'] === stage && (v as { metricName?: string }).metricName === `parley_engine_stage_latency_seconds_${suffix}`)?.value ?? 0;
      return Object.fromEntries(['stt_final', 'llm_first_token', 'response'].map((stage) => [stage, { sum: read(stage, 'sum'), count: read(stage, 'count') }]));
    };
    engineMetrics.stageLatency.reset();
    const llm = new FakeLlm(['Hi, how can I help?', 'We open at nine.']);
    const { engine, clock, stt, feed, turns } = setup(settings(), { llm });
    void engine.start();
    await clock.advance(3000);
    // First question: the VAD's hangover (500 ms) ends it, the recognizer's final comes after.
    await feed(800, speech);
    await feed(600, quiet);
    stt[0].emit({ type: 'final', text: 'Hello there', endOfTurn: true });
    await clock.advance(8000);
    const first = await observed();
    // Second question, 8 s on: the recognizer's endpointing (300 ms) ends the turn while the VAD still hears speech.
    await feed(800, speech);
    await feed(300, quiet);
    stt[0].emit({ type: 'final', text: 'When do you open?', endOfTurn: true });
    await feed(600, quiet);
    await clock.advance(3000);
    const both = await observed();
    expect(turns.filter((t) => t.role === 'user').map((t) => t.text)).toEqual(['Hello there', 'When do you open?']);

    // The first turn: the recognizer's final up to 600 ms of quiet after the words, timed from the VAD's end.
    expect(first['stt_final'].count).toBe(1);
    expect(first['stt_final'].sum).toBeGreaterThan(0);
    expect(first['stt_final'].sum).toBeLessThan(0.2);
    // The second turn is timed from the moment the recognizer ended it: no recognizer wait, and the fakes answer at
    // once (the first audio within a frame or two), never the 8 s since the first question's end of speech.
    const second = (stage: string) => ({ sum: both[stage].sum - first[stage].sum, count: both[stage].count - first[stage].count });
    expect(second('stt_final')).toEqual({ sum: 0, count: 1 });
    expect(second('llm_first_token')).toEqual({ sum: 0, count: 1 });
    expect(second('response').count).toBe(1);
    expect(second('response').sum).toBeLessThan(0.1);
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

  it('answers a caller whose finished sentence is what interrupts the agent (no partial came first)', async () => {
    const llm = new FakeLlm(['This is a fairly long answer that takes a while to read out loud.', 'Sure, Tuesday works.']);
    const { engine, clock, stt, carrier, feed, turns } = setup(settings(), { llm });
    void engine.start();
    await clock.advance(3000);
    stt[0].queue('Question');
    await feed(200, speech);
    await feed(600, quiet);
    await clock.advance(500);
    stt[0].emit({ type: 'final', text: 'Actually can we do Tuesday instead', endOfTurn: true });
    await clock.advance(4000);

    expect(carrier.clears).toBe(1);
    expect(turns.filter((t) => t.role === 'user').map((t) => t.text)).toEqual(['Question', 'Actually can we do Tuesday instead']);
    expect(turns.at(-1)).toMatchObject({ role: 'assistant', text: 'Sure, Tuesday works.', interrupted: false });
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

describe('languages', () => {
  it('follows the caller into another configured language: that entry’s prompt, voice and synthesizer', async () => {
    const agent = agentSettings(
      {
        language_detection: 'follow',
        languages: [
          { code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', tts_provider: 'fake-tts', stt_provider: 'fake-stt' },
          { code: 'fr-FR', voice_id: 'voix', tts_provider: 'french-tts' },
        ],
        conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      },
      {},
      { model: 'm', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    );
    const english = new FakeTextToSpeech({ name: 'fake-tts' });
    const french = new FakeTextToSpeech({ name: 'french-tts' });
    // Built-in lines for French are written by the model; the conversation's reply is streamed.
    const llm = new FakeLlm([], {
      fallback: (request) =>
        String(request.messages[0]?.content).startsWith('Write one short sentence')
          ? String(request.messages[0]?.content).includes('gone quiet')
            ? 'Êtes-vous toujours là ?'
            : 'Au revoir.'
          : 'Bien sûr, nous ouvrons à neuf heures.',
    });
    const { engine, clock, stt, turns, feed } = setup(agent, { tts: [english, french], llm });
    void engine.start();
    await clock.advance(2000);
    expect(stt[0].streams[0].options.language).toBe('multi');
    await feed(300, speech);
    stt[0].emit({ type: 'final', text: 'Bonjour, vous ouvrez quand ?', endOfTurn: true, language: 'fr' });
    await feed(600, quiet);
    await clock.advance(4000);
    expect(french.syntheses.map((s) => [s.request.text, s.request.voiceId, s.request.language])).toEqual([
      ['Bien sûr, nous ouvrons à neuf heures.', 'voix', 'fr-FR'],
    ]);
    const conversation = llm.requests.filter((r) => !String(r.messages[0]?.content).startsWith('Write one short sentence'));
    expect(conversation[0].messages[0]).toEqual({ role: 'system', content: 'You are Ada.\n\nSpeak fr-FR with the caller.' });
    expect(turns.filter((t) => t.role === 'user').map((t) => t.language)).toEqual(['fr-FR']);
  });

  it('asks a quiet caller in the call’s own language when the entry has no silence_prompt', async () => {
    const agent = agentSettings(
      { languages: [{ code: 'fr-FR', greeting: 'Bonjour.' }], conversation: { silence_prompt_seconds: 3, silence_hangup_seconds: 6 } },
      {},
      { model: 'm', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    );
    const llm = new FakeLlm([], { fallback: (r) => (String(r.messages[0]?.content).includes('gone quiet') ? 'Êtes-vous toujours là ?' : 'Au revoir.') });
    const { engine, clock, tts, hangups } = setup(agent, { llm });
    void engine.start();
    await clock.advance(12_000);
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Bonjour.', 'Êtes-vous toujours là ?', 'Au revoir.']);
    expect(hangups).toEqual(['silence']);
  });

  it('stays in the opening language when detection is off', async () => {
    const agent = agentSettings(
      { languages: [{ code: 'en-US', tts_provider: 'fake-tts' }, { code: 'fr-FR', voice_id: 'voix' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } },
      {},
      { model: 'm', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    );
    const { engine, clock, stt, turns, feed } = setup(agent, { llm: new FakeLlm(['Sure.']) });
    void engine.start();
    await clock.advance(500);
    expect(stt[0].streams[0].options.language).toBe('en-US');
    await feed(300, speech);
    stt[0].emit({ type: 'final', text: 'Bonjour', endOfTurn: true, language: 'fr' });
    await clock.advance(2000);
    expect(turns.find((t) => t.role === 'user')?.language).toBe('en-US');
  });
});

describe('a transfer that did not connect', () => {
  it('resumes the conversation where it was, without the greeting, telling the caller', async () => {
    const clock = new ManualClock();
    const carrier = new FakeCarrier(clock);
    const tts = new FakeTextToSpeech();
    const llm = new FakeLlm(['Of course, what else?']);
    const stt = new FakeSpeechToText();
    const turns: EngineTurn[] = [];
    const engine = new VoiceEngine(
      settings(),
      { stt: [stt], tts: [tts], llm },
      { sink: carrier, clock, onTurn: (t) => void turns.push(t), hangup: () => undefined, transfer: async () => undefined },
      {
        sampleRate: RATE,
        variables: { name: 'Sam' },
        resume: { reason: 'transfer_no_answer', turns: [{ role: 'user', text: 'Put me through to sales.' }, { role: 'assistant', text: 'Transferring you now.' }] },
      },
    );
    carrier.engine = engine;
    void engine.start();
    await clock.advance(6000);
    expect(tts.syntheses.map((s) => s.request.text).join(' ')).toBe('I am sorry, I could not reach them. Is there anything else I can help you with?');
    stt.emit({ type: 'final', text: 'Yes, my invoice.', endOfTurn: true });
    await clock.advance(3000);
    expect(llm.requests[0].messages.slice(1, 3)).toEqual([
      { role: 'user', content: 'Put me through to sales.' },
      { role: 'assistant', content: 'Transferring you now.' },
    ]);
    expect(turns.map((t) => t.text)).toContain('Yes, my invoice.');
  });
});

describe('voicemail', () => {
  it('stops the greeting, leaves the message with variables filled, then hangs up', async () => {
    const { engine, clock, tts, hangups, turns } = setup(settings());
    void engine.start();
    await clock.advance(700);
    void engine.leaveVoicemail('Hi {{name}}, please call us back.');
    await clock.advance(5000);
    expect(tts[0].syntheses.map((s) => s.request.text)).toEqual(['Hello Sam, this is Ada.', 'Hi Sam, please call us back.']);
    expect(turns.map((t) => [t.text, t.interrupted])).toEqual([
      [expect.any(String), true],
      ['Hi Sam, please call us back.', false],
    ]);
    expect(hangups).toEqual(['voicemail']);
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

describe('tools in a conversation turn', () => {
  const server = new ToolServer();
  let base = '';
  beforeAll(async () => void (base = await server.start()));
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
    server.answer(200, '{"status":"shipped"}', 'application/json');
  });

  const ENGINE: Partial<EngineOptions> = { tools: { egress: parseEgressAllowlist('127.0.0.1').policy }, callId: 'call_1' };

  const orderTool = (url = `${base}/orders/{{order_id}}/status`, extra: Partial<ToolConfigInput> = {}): ToolConfigInput => ({
    kind: 'custom_function',
    name: 'order_status',
    description: 'Look up the status of an order.',
    request: {
      url,
      headers: { 'X-Shop': 'north' },
      secret_header_values: { Authorization: 'Bearer s3cret' },
      parameters: [
        { name: 'order_id', type: 'string', required: true, in: 'path' },
        { name: 'channel', type: 'string', enum: ['phone', 'web'] },
      ],
    },
    ...extra,
  });

  function toolAgent(effective: EffectiveConfig = {}, tools: RuntimeTools = { tool_configs: [orderTool()] }) {
    return agentSettings(
      {
        languages: [{ code: 'en-US', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }],
        conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      },
      { filler_phrase: 'Let me check that for you.', ...effective },
      { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
      tools,
    );
  }

  function toolSetup(agent: AgentSettings, llm: FakeLlm, host: Partial<EngineHost> = {}) {
    const reports: ToolCallReport[] = [];
    const h = setup(agent, { llm, host: { recordToolCall: (r) => void reports.push(r), ...host }, engine: ENGINE });
    /** Lets the engine's clock and real I/O (the local tool server) move together. */
    const pump = async (ms: number) => {
      for (let t = 0; t < ms; t += 20) {
        await h.clock.advance(20);
        await new Promise((r) => setTimeout(r, 1));
      }
    };
    const spoken = () => h.tts[0].syntheses.map((s) => s.request.text);
    const lastAnswer = () => h.turns.filter((t) => t.role === 'assistant').at(-1)?.text;
    void h.engine.start();
    return { ...h, reports, pump, spoken, lastAnswer };
  }

  const call = (name: string, args: string, id = 'c1') => ({ id, name, arguments: args });

  it('calls a custom function (templated URL, secret header) and answers with its result', async () => {
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"A 17"}')] }, 'Your order A 17 has shipped.']);
    const h = toolSetup(toolAgent(), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('shipped'));

    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/orders/A%2017/status', body: '{}' });
    expect(server.requests[0].headers).toMatchObject({ authorization: 'Bearer s3cret', 'x-shop': 'north' });
    expect(llm.requests[0].tools?.map((t) => t.name)).toEqual(['end_call', 'record_opt_out', 'order_status']);
    expect(llm.requests[1].messages.slice(-3)).toEqual([
      { role: 'user', content: 'Where is my order?' },
      { role: 'assistant', content: '', toolCalls: [call('order_status', '{"order_id":"A 17"}')] },
      { role: 'tool', toolCallId: 'c1', content: '{"status":"shipped"}' },
    ]);
    expect(h.lastAnswer()).toBe('Let me check that for you. Your order A 17 has shipped.');
    expect(h.reports).toEqual([{ name: 'order_status', kind: 'custom_function', arguments: '{"order_id":"A 17"}', ok: true }]);
  });

  describe('calendar tools (fake Cal.com)', () => {
    const cal = new FakeCalCom('cal_live_engine_key');
    let calBase = '';
    beforeAll(async () => void (calBase = await cal.start()));
    afterAll(() => cal.close());
    beforeEach(() => {
      cal.reset();
      cal.slots = { 42: ['2026-03-02T09:00:00.000-05:00', '2026-03-02T09:30:00.000-05:00'] };
    });
    const calendar = { provider: 'cal.com', api_key: { value: 'cal_live_engine_key' }, event_type_id: 42, timezone: 'America/New_York' };
    const calendarTools: ToolConfigInput[] = [
      { kind: 'calendar_availability', name: 'check_times', description: 'Open appointment times.', calendar },
      { kind: 'book_appointment', name: 'book', description: 'Book an appointment.', calendar },
    ];
    const calSetup = (agent: AgentSettings, llm: FakeLlm) => {
      const reports: ToolCallReport[] = [];
      const h = setup(agent, { llm, host: { recordToolCall: (r) => void reports.push(r) }, engine: { ...ENGINE, tools: { ...ENGINE.tools!, calendarBaseUrl: calBase } } });
      void h.engine.start();
      return { ...h, reports, lastAnswer: () => h.turns.filter((t) => t.role === 'assistant').at(-1)?.text };
    };

    it('offers them from tool_configs, checks the times and books one, reported by kind', async () => {
      const llm = new FakeLlm([
        { toolCalls: [call('check_times', '{"start_date":"2026-03-02"}')] },
        'I have 9 or 9:30 on Monday.',
        { toolCalls: [call('book', '{"start":"2026-03-02T09:30:00.000-05:00","name":"Ada"}', 'c2')] },
        'You are booked for 9:30 on Monday.',
      ]);
      const h = calSetup(toolAgent({}, { tool_configs: calendarTools }), llm);
      await h.ask('Can I come in Monday?');
      await h.pumpUntil(() => !!h.lastAnswer()?.includes('9:30 on Monday'));
      expect(llm.requests[0].tools?.map((t) => t.name)).toEqual(['end_call', 'record_opt_out', 'check_times', 'book']);
      expect(llm.requests[1].messages.at(-1)?.content).toContain('Monday, March 2, 9:30 AM (start: 2026-03-02T09:30:00.000-05:00)');
      await h.ask('9:30 please, I am Ada.');
      await h.pumpUntil(() => !!h.lastAnswer()?.includes('booked'));
      expect(llm.requests[3].messages.at(-1)?.content).toContain('Booked for Ada: Monday, March 2, 9:30 AM');
      expect(cal.bookings).toEqual([expect.objectContaining({ eventTypeId: 42, start: '2026-03-02T14:30:00.000Z' })]);
      expect(h.reports).toEqual([
        { name: 'check_times', kind: 'calendar_availability', arguments: '{"start_date":"2026-03-02"}', ok: true },
        { name: 'book', kind: 'book_appointment', arguments: '{"start":"2026-03-02T09:30:00.000-05:00","name":"Ada"}', ok: true },
      ]);
    });

    it('offers them to a custom agent only with call_functions', async () => {
      const custom = (call_functions: boolean) =>
        calSetup(toolAgent({ autonomy: 'custom', capabilities: { end_call: true, call_functions } }, { tool_configs: calendarTools }), new FakeLlm(['Hi.']));
      for (const [callFunctions, expected] of [
        [true, ['end_call', 'record_opt_out', 'check_times', 'book']],
        [false, ['end_call', 'record_opt_out']],
      ] as const) {
        const h = custom(callFunctions);
        await h.ask('Hello?');
        await h.pumpUntil(() => h.llm.requests.length > 0);
        expect(h.llm.requests[0].tools?.map((t) => t.name)).toEqual(expected);
      }
    });
  });

  it('refuses arguments outside the schema without a request and lets the model recover', async () => {
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"1","channel":"fax"}')] }, 'Did you order by phone or on the web?']);
    const h = toolSetup(toolAgent(), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('phone or on the web'));

    expect(server.requests).toHaveLength(0);
    const result = llm.requests[1].messages.at(-1);
    expect(result).toMatchObject({ role: 'tool', toolCallId: 'c1' });
    expect(result?.content).toContain('Refused, no request was made: "channel" must be one of "phone", "web"');
    expect(h.reports).toEqual([expect.objectContaining({ name: 'order_status', ok: false, error: expect.stringContaining('invalid arguments') })]);
  });

  it('refuses a tool URL to a private address', async () => {
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"1"}')] }, 'Sorry, I cannot look that up right now.']);
    const h = toolSetup(toolAgent({}, { tool_configs: [orderTool('https://10.1.2.3/orders/{{order_id}}')] }), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('cannot look that up'));

    expect(llm.requests[1].messages.at(-1)?.content).toBe('The tool call failed: the service could not be reached.');
    expect(h.reports).toEqual([expect.objectContaining({ ok: false, error: 'refused by the outbound request guard' })]);
  });

  it('calls a registered function the agent names, POSTing the arguments as JSON', async () => {
    server.answer(200, 'Sunny, 21 degrees');
    const weather: RegisteredFunction = { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, url: `${base}/weather` };
    const llm = new FakeLlm([{ toolCalls: [call('weather', '{"city":"Oslo"}')] }, 'It is sunny in Oslo.']);
    const h = toolSetup(toolAgent({ tools: ['weather'] }, { tool_configs: [], functions: [weather] }), llm);
    await h.ask('What is the weather in Oslo?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('sunny in Oslo'));

    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/weather', body: '{"city":"Oslo"}' });
    expect(llm.requests[1].messages.at(-1)?.content).toBe('Sunny, 21 degrees');
    expect(h.reports).toEqual([{ name: 'weather', kind: 'registered_function', arguments: '{"city":"Oslo"}', ok: true }]);
  });

  it('stops calling tools after max_tool_rounds and asks for an answer in words', async () => {
    const lookup = { toolCalls: [call('order_status', '{"order_id":"1"}')] };
    const llm = new FakeLlm([lookup, lookup, { deltas: ['I could not find it.'], toolCalls: [call('order_status', '{"order_id":"1"}')] }]);
    const h = toolSetup(toolAgent({ autonomy: 'custom', capabilities: { call_functions: true, max_tool_rounds: 2 } }), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('could not find it'));

    expect(llm.requests).toHaveLength(3);
    expect(server.requests).toHaveLength(2);
    expect(llm.requests.map((r) => r.toolChoice)).toEqual([undefined, undefined, 'none']);
    expect(llm.requests[0].tools?.map((t) => t.name)).toEqual(['record_opt_out', 'order_status']);
    expect(h.reports).toHaveLength(2);
  });

  it('speaks the filler while the tool runs, and the answer once it is back', async () => {
    let release: () => void = () => undefined;
    server.respond((_, res) => (release = () => res.writeHead(200).end('{"status":"packed"}')));
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"1"}')] }, 'It is packed.']);
    const h = toolSetup(toolAgent(), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => server.requests.length === 1);
    const before = h.carrier.framesAfter(0);
    await h.pump(1000);
    expect(h.spoken()).toEqual(['Let me check that for you.']);
    expect(h.carrier.framesAfter(0) - before).toBeGreaterThan(20);
    expect(llm.requests).toHaveLength(1);
    release();
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('packed'));
    expect(h.lastAnswer()).toBe('Let me check that for you. It is packed.');
  });

  it('speaks the tool’s pre_tool_message in the call’s language instead of the filler', async () => {
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"1"}')] }, 'It has shipped.']);
    const h = toolSetup(toolAgent({}, { tool_configs: [orderTool(undefined, { pre_tool_message: { 'en-US': 'One moment while I look.' } })] }), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('shipped'));
    expect(h.spoken()).toEqual(['One moment while I look.', 'It has shipped.']);
  });

  it('barge-in during a tool stops the filler and aborts the tool’s request', async () => {
    let closed = false;
    server.respond((_, res) => res.on('close', () => (closed = true)));
    const llm = new FakeLlm([{ toolCalls: [call('order_status', '{"order_id":"1"}')] }]);
    const h = toolSetup(toolAgent(), llm);
    await h.ask('Where is my order?');
    await h.pumpUntil(() => server.requests.length === 1);
    await h.pump(300);
    h.stt[0].emit({ type: 'partial', text: 'no wait' });
    await h.pumpUntil(() => closed && h.reports.length === 1);
    expect(h.carrier.clears).toBe(1);
    expect(h.reports).toEqual([expect.objectContaining({ ok: false, error: 'interrupted' })]);
    expect(llm.requests).toHaveLength(1);
  });

  it('transfers to the configured destination after the webhook, waiting for it at most 3 s', async () => {
    server.hang();
    const transfer: ToolConfigInput = { kind: 'transfer_call', name: 'to_sales', description: 'Sales', pre_tool_message: { en: 'Putting you through.' }, transfer: { destination: '+15550100200', webhook_url: `${base}/transfer` } };
    const llm = new FakeLlm([{ toolCalls: [call('to_sales', '{"reason":"wants sales","destination":"+19995550000"}')] }]);
    const h = toolSetup(toolAgent({}, { tool_configs: [transfer] }), llm);
    await h.ask('Sales please.');
    await h.pumpUntil(() => server.requests.length === 1);
    expect(JSON.parse(server.requests[0].body)).toEqual({ type: 'call.transfer', call_id: 'call_1', tool: 'to_sales', destination: '+15550100200', reason: 'wants sales' });
    await h.pump(2000);
    expect(h.transfers).toEqual([]);
    await h.pump(1200);
    expect(h.transfers).toEqual(['+15550100200']);
    await h.pump(2000);
    expect(llm.requests).toHaveLength(1);
    expect(h.spoken()).toEqual(['Putting you through.']);
    expect(h.hangups).toEqual([]);
    expect(h.reports).toEqual([{ name: 'to_sales', kind: 'transfer_call', arguments: '{"reason":"wants sales","destination":"+19995550000"}', ok: true }]);
  });

  it('says so and carries on when the transfer fails', async () => {
    const llm = new FakeLlm([{ toolCalls: [call('transfer_call', '{}')] }, 'Sorry, I could not put you through. How else can I help?']);
    const h = toolSetup(toolAgent({ transfer_number: '+15550100999' }, { tool_configs: [] }), llm, {
      transfer: async () => {
        throw new Error('conflict: the call is not in progress');
      },
    });
    await h.ask('A person please.');
    await h.pumpUntil(() => !!h.lastAnswer()?.includes('could not put you through'));
    expect(llm.requests[1].messages.at(-1)?.content).toContain('The transfer did not go through');
    expect(h.reports).toEqual([expect.objectContaining({ name: 'transfer_call', kind: 'transfer_call', ok: false, error: 'transfer failed' })]);
  });

  it('records an opt-out through the host, then ends the call with end_call; both reported', async () => {
    let optOuts = 0;
    const llm = new FakeLlm([
      { deltas: ['Of course.'], toolCalls: [call('record_opt_out', '')] },
      { deltas: ['You will not hear from us again. Goodbye.'], toolCalls: [call('end_call', '{}', 'e1')] },
    ]);
    const h = toolSetup(toolAgent(), llm, { recordOptOut: async () => void optOuts++ });
    await h.ask('Please never call me again.');
    await h.pumpUntil(() => h.hangups.length === 1);
    expect(optOuts).toBe(1);
    expect(llm.requests[1].messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('will not be contacted again') });
    expect(h.spoken()).not.toContain('Let me check that for you.');
    expect(h.hangups).toEqual(['agent']);
    expect(h.reports).toEqual([
      { name: 'record_opt_out', kind: 'record_opt_out', arguments: '{}', ok: true },
      { name: 'end_call', kind: 'end_call', arguments: '{}', ok: true },
    ]);
  });
});

describe('fixed lines synthesized ahead', () => {
  /** A voice whose first audio takes 300 ms (of the test's clock), as a vendor's often does. */
  class SlowVoice implements TextToSpeech {
    readonly name = 'fake-tts';
    readonly asked: [string, number][] = [];
    private readonly inner = new FakeTextToSpeech();

    constructor(private readonly clock: ManualClock) {}

    async *synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
      this.asked.push([request.text, this.clock.now()]);
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 300));
      yield* this.inner.synthesize(request);
    }
  }

  function call(agent: AgentSettings, lines: LineCache | undefined) {
    const clock = new ManualClock();
    const carrier = new FakeCarrier(clock);
    const voice = new SlowVoice(clock);
    const turns: EngineTurn[] = [];
    const engine = new VoiceEngine(
      agent,
      { stt: [new FakeSpeechToText()], tts: [voice], llm: new FakeLlm(), lines },
      { sink: carrier, clock, onTurn: (t) => void turns.push(t), hangup: () => undefined, transfer: async () => undefined },
      { sampleRate: RATE, variables: { name: 'Sam' } },
    );
    carrier.engine = engine;
    /** When the first frame at or after `at` went out. */
    const firstFrameFrom = (at: number) => carrier.log.find((e) => e.kind === 'audio' && e.at >= at)?.at ?? Infinity;
    return { clock, engine, voice, turns, firstFrameFrom };
  }

  it('starts the silence prompt within 100 ms of its moment, though the voice takes 300 ms to first audio', async () => {
    const agent = settings({}, { silence_prompt_seconds: 3, silence_hangup_seconds: 20 });
    const cached = call(agent, new LineCache());
    void cached.engine.start();
    await cached.clock.advance(7000);
    const due = cached.turns[0].endMs + 3000;
    expect(cached.turns.map((t) => t.text)).toEqual(['Hello Sam, this is Ada.', 'Are you still there?']);
    expect(cached.firstFrameFrom(due) - due).toBeLessThanOrEqual(100);
    // Both lines were asked for when the call started, the greeting first.
    expect(cached.voice.asked.map(([text]) => text)).toEqual(['Hello Sam, this is Ada.', 'Are you still there?', 'Goodbye.']);
    expect(cached.voice.asked[0][1]).toBe(0);

    // Synthesized at its moment instead, the prompt starts the voice's 300 ms late.
    const live = call(agent, undefined);
    void live.engine.start();
    await live.clock.advance(7000);
    const liveDue = live.turns[0].endMs + 3000;
    expect(live.firstFrameFrom(liveDue) - liveDue).toBeGreaterThanOrEqual(300);
  });

  it('re-prompts a keypad caller within 100 ms of the timeout', async () => {
    const agent = settings({
      mode: 'keypad',
      no_input: 'Sorry, I did not get that.',
      keypad_timeout_seconds: 3,
      max_no_input: 3,
      flow: { start: 'menu', nodes: [{ id: 'menu', type: 'static', say: 'Press 1 for sales.', edges: [{ to: 'menu', type: 'always' }] }] },
    });
    const { clock, engine, turns, firstFrameFrom } = call(agent, new LineCache());
    void engine.start();
    await clock.advance(6000);
    const due = turns[0].endMs + 3000;
    expect(turns.map((t) => t.text).slice(0, 2)).toEqual(['Press 1 for sales.', 'Sorry, I did not get that.']);
    expect(firstFrameFrom(due) - due).toBeLessThanOrEqual(100);
  });

  it('shares the worker’s cache between calls: a line said before is not synthesized again', async () => {
    const lines = new LineCache();
    const agent = settings({}, { silence_prompt_seconds: 3, silence_hangup_seconds: 20 });
    const first = call(agent, lines);
    void first.engine.start();
    await first.clock.advance(2000);
    const second = call(agent, lines);
    void second.engine.start();
    await second.clock.advance(6000);
    expect(second.voice.asked).toEqual([]);
    expect(second.turns.map((t) => t.text)).toEqual(['Hello Sam, this is Ada.', 'Are you still there?']);
  });
});
