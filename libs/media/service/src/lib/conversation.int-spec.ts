import { performance } from 'node:perf_hooks';
import { mulawToPcm16, parseWav, powerAt as goertzel, rms } from '@parley/audio';
import { callerSpeechMulaw, EnergySpeechDetector, FakeElevenLabsServer, fakeToneFrequency } from '@parley/speech';
import { EnergyVad, SentenceChunker } from '@parley/voice-engine';
import { COMFORT_NOISE, until } from './testing/caller-line';
import { carriesToneOf, closeAll, isClear, isMedia, MS_PER_CHAR, nextMessage, pcmOf, placeCall, RATE, spokenTexts } from './testing/phone-call';

/*
 * Scenario tests of the media worker over the real stack (testing/phone-call.ts): a MediaStreamServer on 127.0.0.1,
 * the real provider adapters (Deepgram, ElevenLabs, OpenAI speech and an OpenAI-compatible model) against local
 * fake vendor servers, and Twilio's side of the call played by FakeTwilioServer: the call is placed with
 * TwilioCarrier (its TwiML names the media server's stream URL and the call's token), then its <Connect><Stream> is
 * opened and the caller speaks real synthetic speech (mespeak) in real time over a line that otherwise carries low
 * comfort noise, as a phone line does. The control plane (calls and agents) is an in-process fake that ends and
 * transfers the call through the carrier, as the calls service does, so Twilio stops the stream.
 */

/** An agent in conversation mode on Deepgram and ElevenLabs, quiet-line timers off unless asked for. */
function conversationAgent(language: Record<string, unknown>, conversation: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    mode: 'conversation',
    languages: [{ code: 'en-US', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada', ...language }],
    conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1, ...conversation },
  };
}

/** Goertzel: the signal's power at `hz`. */
const powerAt = (pcm: Int16Array, hz: number) => goertzel(pcm, hz, RATE);

/** Which of the candidate frequencies the audio carries most. */
function loudestOf(pcm: Int16Array, candidates: number[]): number {
  return candidates.reduce((best, hz) => (powerAt(pcm, hz) > powerAt(pcm, best) ? hz : best));
}

/**
 * The offset into `mulaw` at which the engine's VAD declares speech (on a line that carried comfort noise before):
 * the frame that arrives then is the one its 1.5 s "kept talking" count starts from.
 */
function vadOnsetMs(mulaw: Buffer): number {
  const vad = new EnergyVad();
  const noise = mulawToPcm16(COMFORT_NOISE);
  for (let at = 0; at + 160 <= noise.length; at += 160) vad.push(noise.subarray(at, at + 160), 20);
  const pcm = mulawToPcm16(mulaw);
  for (let at = 0; at + 160 <= pcm.length; at += 160) if (vad.push(pcm.subarray(at, at + 160), 20) === 'speech_start') return (at / 160) * 20;
  throw new Error('no speech in the caller audio');
}

function sentencesOf(text: string): string[] {
  const chunker = new SentenceChunker();
  return [...chunker.push(`${text} `), chunker.flush()].filter((s): s is string => !!s);
}

const timings: string[] = [];

afterEach(closeAll);

afterAll(async () => {
  await closeAll();
  if (timings.length) console.log(`conversation timings:\n${timings.join('\n')}`);
});

// ---- the scenarios ----------------------------------------------------------------------------------------

describe('a phone conversation over the media worker (Twilio stream, real adapters, fake vendors)', () => {
  it('speaks the greeting as soon as the stream opens, exactly as written with the call variables filled in', async () => {
    const greeting = 'Hello Sam, this is Ada from Parley.';
    const c = await placeCall({ spec: conversationAgent({ greeting: 'Hello {{name}}, this is Ada from {{company}}.' }), variables: { name: 'Sam', company: 'Parley' } });

    const turn = await until(() => c.control.turns[0], 'the greeting turn');
    const firstMediaAt = await c.firstMedia;

    // The call was placed with TwiML streaming to the media server, carrying the call's token.
    expect(c.twilio.calls[0].twiml).toContain(`<Stream url="${c.streamUrl}">`);
    // It says where it takes commands about the call (EndStream, LeaveVoicemail).
    expect(c.control.attached).toEqual([{ stream_token: c.token, carrier: 'twilio', carrier_call_id: c.sid, command_address: '127.0.0.1:50053' }]);
    expect(c.control.agentReads).toEqual([expect.objectContaining({ accountId: 'acc_1', agentId: 'agent_ada' })]);
    // ElevenLabs was asked for exactly the greeting, on the agent's voice, as raw PCM.
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual([greeting]);
    expect(FakeElevenLabsServer.voiceIdOf(c.elevenLabs.requests[0])).toBe('voice-ada');
    expect(c.elevenLabs.requests[0].query['output_format']).toBe('pcm_16000');
    // All of it reached the caller: 20 ms frames of the greeting's tone, each played before the turn was recorded.
    const greetingMs = greeting.length * MS_PER_CHAR;
    expect(c.stream.receivedFrames).toBeGreaterThanOrEqual(greetingMs / 20);
    expect(c.stream.receivedFrames).toBeLessThanOrEqual(greetingMs / 20 + 1);
    expect(carriesToneOf(mulawToPcm16(c.stream.receivedAudio()), greeting)).toBe(true);
    expect(c.stream.problems).toEqual([]);
    expect(turn).toMatchObject({ role: 'assistant', text: greeting, language: 'en-US', interrupted: false });
    expect(turn.start_ms).toBeLessThan(250);
    expect(turn.at - firstMediaAt).toBeGreaterThanOrEqual(greetingMs - 60);
    // A conversation listens from the start: Deepgram was opened for 8 kHz linear16.
    expect(c.deepgram.connections).toHaveLength(1);
    expect(c.deepgram.connections[0].params).toMatchObject({ encoding: 'linear16', sample_rate: '8000', language: 'en-US' });
    timings.push(`greeting: first audio ${Math.round(firstMediaAt - c.connectedAt)} ms after the stream opened`);
  }, 15_000);

  it('answers one caller turn: transcript → model (system prompt and history) → synthesized reply played; turns recorded in order', async () => {
    const question = 'I would like to know when you open tomorrow.';
    const answer = 'We open at nine tomorrow. See you then, Sam!';
    const speech = callerSpeechMulaw(question);
    const c = await placeCall({
      spec: conversationAgent({ greeting: 'Hello {{name}}.', system_prompt: 'You are Ada, the assistant of {{company}}. Be brief.' }),
      variables: { name: 'Sam', company: 'Parley' },
      utterances: [question],
      llm: () => answer,
    });
    await until(() => c.control.turns[0], 'the greeting turn');

    const reply = nextMessage(c.stream, isMedia);
    const said = await c.line.say(speech);
    const { at: replyAt } = await reply;
    const last = await until(() => c.control.turns[2], 'the answer turn');

    expect(c.control.turns.map((t) => [t.role, t.text, t.interrupted])).toEqual([
      ['assistant', 'Hello Sam.', false],
      ['user', question, false],
      ['assistant', answer, false],
    ]);
    expect(last.start_ms).toBeGreaterThanOrEqual(c.control.turns[1].end_ms);
    // The model got the agent's instructions (variables filled in) and the conversation so far.
    expect(c.llm.requests).toHaveLength(1);
    const body = c.llm.requests[0].body;
    expect(body.model).toBe('fake-model');
    expect(body.stream).toBe(true);
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are Ada, the assistant of Parley. Be brief.' },
      { role: 'assistant', content: 'Hello Sam.' },
      { role: 'user', content: question },
    ]);
    expect(body.tools?.map((t) => t.function.name)).toEqual(['end_call', 'record_opt_out']);
    // Synthesized sentence by sentence, and heard.
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello Sam.', ...sentencesOf(answer)]);
    const heard = c.stream.received.filter(isMedia).map(pcmOf);
    expect(heard.filter((pcm) => carriesToneOf(pcm, 'We open at nine tomorrow.')).length).toBeGreaterThan(40);
    expect(c.stream.clears).toBe(0);
    // The end of the caller's words as Deepgram's endpointing hears them (the fake's detector, on the same audio).
    const [segment] = new EnergySpeechDetector(RATE).push(Int16Array.from([...mulawToPcm16(speech), ...new Int16Array(RATE)]));
    timings.push(`one turn: the answer's first audio ${Math.round(replyAt - said.startedAt - segment.endMs)} ms after the caller's last word (incl. 300 ms endpointing)`);
  }, 20_000);

  it('stops at once when the caller talks over a long answer: clear, the answer cut to what was heard, nothing of it after the clear', async () => {
    const question = 'Can you tell me your opening hours?';
    const long =
      'We open at nine in the morning on weekdays. On Saturdays we open at ten and close at four. On Sundays the store stays closed all day. Holiday hours are posted on our website a week ahead. The cafe inside keeps its own hours as well.';
    const correction = 'Actually I only need the phone number.';
    const later = 'Our number is five five five, zero one two three.';
    const asking = callerSpeechMulaw(question);
    const interruption = callerSpeechMulaw('Sorry to interrupt, but I really only need the phone number for the main office please.');
    const longTones = sentencesOf(long).map(fakeToneFrequency);
    // Precondition: the later answer's tone is told apart from every sentence of the long one.
    expect(Math.min(...longTones.map((hz) => Math.abs(hz - fakeToneFrequency(later))))).toBeGreaterThan(100);
    let answers = 0;
    const c = await placeCall({
      spec: conversationAgent({ system_prompt: 'You are Ada.' }),
      utterances: [question, correction],
      // Both the model and the voice produce in real time: the answer takes over ten seconds to play.
      llm: () => (++answers === 1 ? { content: long, chunkDelayMs: 40 } : later),
      voice: { msPerChar: 50, chunkMs: 100, chunkIntervalMs: 100 },
    });

    await c.line.say(asking);
    await until(() => c.stream.receivedFrames >= 50, 'a second of the answer');
    const clear = nextMessage(c.stream, isClear, 15_000);
    const talking = c.line.say(interruption);
    const { message: clearMessage, at: clearAt } = await clear;
    const { startedAt } = await talking;
    const answered = await until(() => c.control.turns.find((t) => t.role === 'assistant' && t.text === later), 'the answer to the correction', 15_000);

    // The caller kept talking for 1.5 s over the answer: that, not its words (Deepgram had not answered yet), cut it.
    const expectedAt = startedAt + vadOnsetMs(interruption) + 1500;
    expect(clearAt - expectedAt).toBeLessThan(400);
    expect(clearAt - expectedAt).toBeGreaterThan(-60);
    expect(c.stream.clears).toBe(1);
    // The answer is recorded as interrupted, cut to a strict prefix of what the model wrote.
    expect(c.control.turns.map((t) => [t.role, t.interrupted])).toEqual([
      ['user', false],
      ['assistant', true],
      ['user', false],
      ['assistant', false],
    ]);
    const cut = c.control.turns[1];
    expect(cut.text.length).toBeGreaterThan(10);
    expect(cut.text.length).toBeLessThan(long.length);
    expect(long.startsWith(cut.text)).toBe(true);
    expect(c.control.turns[2].text).toBe(correction);
    // The model's next request carries the answer as heard, not as written.
    expect(c.llm.requests[1].body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: cut.text },
      { role: 'user', content: correction },
    ]);
    // Every stage stopped: the sentence being synthesized was cancelled, nothing more of the answer was asked for.
    expect(c.elevenLabs.requests.some((r) => r.outcome === 'closed')).toBe(true);
    const askedAfterClear = c.elevenLabs.requests.filter((r) => r.receivedAt > clearAt).map((r) => r.body?.['text']);
    expect(askedAfterClear).toEqual([later]);
    // After the clear, every frame the caller got is the later answer's, none the interrupted one's.
    const after = c.stream.received.slice(c.stream.received.indexOf(clearMessage) + 1).filter(isMedia).map(pcmOf);
    const candidates = [...longTones, fakeToneFrequency(later)];
    const tonal = after.filter((pcm) => rms(pcm) > 500);
    expect(tonal.length).toBeGreaterThan(40);
    expect(tonal.filter((pcm) => loudestOf(pcm, candidates) !== fakeToneFrequency(later))).toHaveLength(0);
    expect(answered.interrupted).toBe(false);
    timings.push(`barge-in: clear ${Math.round(clearAt - expectedAt)} ms after 1.5 s of talking over the answer; heard "${cut.text}"`);
  }, 30_000);

  it('keeps talking over fewer caller words than interrupt_words, and stops once a partial reaches it', async () => {
    const question = 'Can you tell me your opening hours?';
    const long =
      'We open at nine in the morning on weekdays. On Saturdays we open at ten and close at four. On Sundays the store stays closed all day. Holiday hours are posted on our website a week ahead.';
    const asking = callerSpeechMulaw(question);
    const backchannel = callerSpeechMulaw('uh huh');
    const c = await placeCall({
      spec: conversationAgent({ system_prompt: 'You are Ada.' }, { interrupt_words: 3 }),
      utterances: [question, 'uh huh'],
      llm: () => ({ content: long, chunkDelayMs: 40 }),
      voice: { msPerChar: 50, chunkMs: 100, chunkIntervalMs: 100 },
    });

    await c.line.say(asking);
    await until(() => c.stream.receivedFrames >= 50, 'a second of the answer');
    const dg = c.deepgram.connections[0];
    const finalizes = () => dg.controlMessages.filter((m) => m.type === 'Finalize').length;
    const before = finalizes();
    await c.line.say(backchannel);
    // Deepgram heard it (interim then final "uh huh") and the engine's VAD saw the end of it (its Finalize).
    await until(() => finalizes() > before, 'the engine to settle the backchannel');
    const transcripts = dg.sent.filter((m) => m['type'] === 'Results').map((m) => [(m['channel'] as { alternatives: { transcript: string }[] }).alternatives[0].transcript, m['is_final']]);
    expect(transcripts).toEqual(expect.arrayContaining([['uh huh', false], ['uh huh', true]]));
    expect(mulawToPcm16(backchannel).length / 8).toBeLessThan(1500);
    expect(c.stream.clears).toBe(0);
    expect(c.control.turnsOf('assistant')).toEqual([]);
    expect(c.control.turnsOf('user').map((t) => t.text)).toEqual([question]);

    // A three-word partial (no stop word in it) reaches the threshold.
    const clear = nextMessage(c.stream, isClear);
    const sentAt = performance.now();
    c.deepgram.sendToClients({
      type: 'Results',
      channel_index: [0, 1],
      duration: 0.9,
      start: 10,
      is_final: false,
      speech_final: false,
      channel: { alternatives: [{ transcript: 'tell me more', confidence: 0.9, words: [] }] },
      metadata: { request_id: dg.requestId },
      from_finalize: false,
    });
    const { at: clearAt } = await clear;
    const cut = await until(() => c.control.turnsOf('assistant')[0], 'the interrupted answer');
    expect(cut.interrupted).toBe(true);
    expect(long.startsWith(cut.text)).toBe(true);
    expect(c.stream.clears).toBe(1);
    timings.push(`interrupt_words: clear ${Math.round(clearAt - sentAt)} ms after Deepgram sent the 3-word partial`);
  }, 30_000);

  it('prompts a quiet caller and then says goodbye and hangs up, at silence_prompt_seconds and silence_hangup_seconds', async () => {
    const c = await placeCall({
      spec: conversationAgent(
        { greeting: 'Hello {{name}}.', silence_prompt: 'Are you still there, {{name}}?' },
        { silence_prompt_seconds: 3, silence_hangup_seconds: 5 },
      ),
    });
    const end = await until(() => c.control.ends[0], 'the end of the call', 12_000);
    await c.stream.closed;

    expect(end.reason).toBe('silence');
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello Sam.', 'Are you still there, Sam?', 'Goodbye.']);
    expect(c.control.turns.map((t) => t.text)).toEqual(['Hello Sam.', 'Are you still there, Sam?', 'Goodbye.']);
    // Counted from the end of the greeting (its turn is recorded once the caller has heard it all).
    const greetingEnd = c.control.turns[0].at;
    const [, prompt, goodbye] = c.elevenLabs.requests.map((r) => r.receivedAt - greetingEnd);
    // Wall-clock bounds, loose enough for a throttled CI machine (bench/media measures the engine's latency).
    expect(Math.abs(prompt - 3000)).toBeLessThanOrEqual(250);
    expect(Math.abs(goodbye - 5000)).toBeLessThanOrEqual(250);
    // The goodbye was heard before the line was hung up; Twilio stopped the stream when the call was ended.
    expect(c.control.turns[2].at).toBeLessThanOrEqual(end.at);
    expect(c.twilio.callResources.get(c.sid)?.status).toBe('completed');
    timings.push(`silence: prompt at +${Math.round(prompt)} ms, goodbye at +${Math.round(goodbye)} ms after the greeting ended`);
  }, 15_000);

  it('says goodbye and ends the call with max_duration at max_call_seconds', async () => {
    const c = await placeCall({ spec: conversationAgent({ greeting: 'Hello {{name}}.' }, { max_call_seconds: 2 }) });
    const end = await until(() => c.control.ends[0], 'the end of the call', 8_000);
    await c.stream.closed;

    expect(end.reason).toBe('max_duration');
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello Sam.', 'Goodbye.']);
    expect(c.control.turns.map((t) => t.text)).toEqual(['Hello Sam.', 'Goodbye.']);
    const goodbyeAfter = c.elevenLabs.requests[1].receivedAt - c.control.agentReads[0].at;
    expect(goodbyeAfter).toBeGreaterThanOrEqual(2000);
    expect(goodbyeAfter).toBeLessThan(2400);
    expect(c.control.turns[1].at).toBeLessThanOrEqual(end.at);
    timings.push(`max_call_seconds: goodbye asked for ${Math.round(goodbyeAfter)} ms after the call's engine started`);
  }, 12_000);

  it('reads the keypad menu and follows the key pressed, with no recognizer opened', async () => {
    const menu = 'Press 1 for sales, 2 for support.';
    const support = 'Support is open nine to five.';
    const c = await placeCall({
      spec: {
        mode: 'keypad',
        languages: [{ code: 'en-US', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' }],
        flow: {
          start: 'menu',
          nodes: [
            {
              id: 'menu',
              type: 'static',
              say: menu,
              edges: [
                { to: 'sales', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '1' }] } },
                { to: 'support', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '2' }] } },
              ],
            },
            { id: 'sales', type: 'static', say: 'Connecting you to sales.' },
            { id: 'support', type: 'static', say: support },
          ],
        },
      },
    });
    await until(() => c.control.turns[0], 'the menu');
    const supportAudio = nextMessage(c.stream, isMedia);
    c.stream.sendDtmf('2');
    const { message } = await supportAudio;
    const end = await until(() => c.control.ends[0], 'the end of the call');

    expect(spokenTexts(c.elevenLabs, 'text')).toEqual([menu, support]);
    expect(c.control.turns.map((t) => [t.role, t.text])).toEqual([
      ['assistant', menu],
      ['user', '2'],
      ['assistant', support],
    ]);
    expect(carriesToneOf(pcmOf(message), support)).toBe(true);
    expect(end.reason).toBe('completed');
    expect(c.deepgram.connections).toHaveLength(0);
    expect(c.transcription.requests).toHaveLength(0);
    expect(c.llm.requests).toHaveLength(0);
  }, 12_000);

  it('runs a tool in the turn: record_opt_out reaches the calls service, its result goes back to the model over the wire, call.tool.called reported', async () => {
    const question = 'Please take my number off your list.';
    const answer = 'Done, we will not call you again.';
    const c = await placeCall({
      spec: conversationAgent({ greeting: 'Hello.' }),
      utterances: [question],
      llm: (body) =>
        body.messages.some((m) => m.role === 'tool') ? answer : { content: 'Of course.', toolCalls: [{ id: 'call_opt', name: 'record_opt_out', arguments: '{}' }] },
    });
    await until(() => c.control.turns[0], 'the greeting turn');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turns[2], 'the answer turn');

    expect(c.control.optOuts).toEqual([expect.objectContaining({ account_id: 'acc_1', number: '' })]);
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'record_opt_out', kind: 'record_opt_out', arguments_json: '{}', ok: true, error: '' })]);
    expect(c.llm.requests).toHaveLength(2);
    expect(c.llm.requests[1].body.messages.slice(-2)).toEqual([
      expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'call_opt', function: { name: 'record_opt_out', arguments: '{}' } })] }),
      { role: 'tool', tool_call_id: 'call_opt', content: expect.stringContaining('will not be contacted again') },
    ]);
    expect(c.control.turns[2]).toMatchObject({ role: 'assistant', text: `Of course. ${answer}`, interrupted: false });
  }, 20_000);

  it('in normal mode reads the greeting, then transfers the call to transfer_number', async () => {
    const greeting = 'Putting you through to our front desk.';
    const c = await placeCall({
      spec: { mode: 'normal', languages: [{ code: 'en-US', greeting, tts_provider: 'elevenlabs', voice_id: 'voice-ada' }] },
      effective: { transfer_number: '+15550100999' },
    });
    const transfer = await until(() => c.control.transfers[0], 'the transfer');
    await c.stream.closed;

    expect(transfer.destination).toBe('+15550100999');
    expect(c.control.turns.map((t) => [t.role, t.text])).toEqual([['assistant', greeting]]);
    expect(c.control.turns[0].at).toBeLessThanOrEqual(transfer.at);
    expect(c.stream.receivedFrames).toBeGreaterThanOrEqual((greeting.length * MS_PER_CHAR) / 20);
    // Twilio was redirected to dial the number (which ended the stream); the call was not hung up.
    const update = c.twilio.calls.find((r) => r.action === 'update');
    expect(update?.twiml).toContain('<Dial><Number>+15550100999</Number></Dial>');
    expect(c.control.ends).toEqual([]);
    expect(c.deepgram.connections).toHaveLength(0);
  }, 12_000);

  it('falls back to OpenAI transcription when Deepgram refuses, and to OpenAI speech when ElevenLabs fails, within the turn', async () => {
    const question = 'I need help with my order.';
    const answer = 'Of course, what is your order number?';
    const speech = callerSpeechMulaw(question);
    const c = await placeCall({
      spec: conversationAgent({ greeting: 'Hello {{name}}.', system_prompt: 'You are Ada.' }),
      llm: () => answer,
      before: ({ deepgram, transcription }) => {
        deepgram.failNextConnection(503);
        transcription.transcripts(question);
      },
    });
    await until(() => c.control.turns[0], 'the greeting');
    c.elevenLabs.failNext(500, 'overloaded');
    const reply = nextMessage(c.stream, isMedia);
    await c.line.say(speech);
    const { message } = await reply;
    await until(() => c.control.turns[2], 'the answer');

    expect(c.deepgram.refused).toEqual([503]);
    expect(c.deepgram.connections).toHaveLength(0);
    // The caller's turn, cut by the engine's VAD, was sent to OpenAI as one WAV and transcribed.
    expect(c.transcription.requests).toHaveLength(1);
    expect(c.transcription.requests[0]).toMatchObject({ model: 'gpt-4o-mini-transcribe', language: 'en', fileType: 'audio/wav' });
    expect(c.transcription.requests[0].wav?.sampleRate).toBe(RATE);
    expect(c.transcription.requests[0].wav?.durationMs).toBeGreaterThan(speech.length / 8);
    expect(c.control.turns.map((t) => [t.role, t.text, t.interrupted])).toEqual([
      ['assistant', 'Hello Sam.', false],
      ['user', question, false],
      ['assistant', answer, false],
    ]);
    // ElevenLabs spoke the greeting and failed the answer; OpenAI's voice spoke it and the caller heard it.
    expect(c.elevenLabs.requests.map((r) => [r.body?.['text'], r.status])).toEqual([
      ['Hello Sam.', 200],
      [answer, 500],
    ]);
    expect(c.openAiSpeech.requests.map((r) => [r.body?.['input'], r.body?.['response_format'], r.body?.['voice']])).toEqual([[answer, 'pcm', 'alloy']]);
    expect(carriesToneOf(pcmOf(message), answer)).toBe(true);
  }, 20_000);

  it('records both sides when record_calls is on, and stores the WAV and reports it when the stream stops', async () => {
    const greeting = 'Hello Sam, this call is recorded.';
    const question = 'Hello there.';
    const answer = 'Hi, how can I help you today?';
    const speech = callerSpeechMulaw(question);
    const c = await placeCall({
      spec: conversationAgent({ greeting, system_prompt: 'You are Ada.' }),
      recording: true,
      utterances: [question],
      llm: () => answer,
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(speech);
    await until(() => c.control.turns[2], 'the answer');
    c.line.stop();
    const stoppedAt = performance.now();
    await c.stream.stop();
    const report = await until(() => c.control.recordings[0], 'the recording');

    const key = `recordings/acc_1/${c.call.id}.wav`;
    expect(report).toMatchObject({ account_id: 'acc_1', call_id: c.call.id, key, content_type: 'audio/wav' });
    expect(Math.abs(report.duration_seconds * 1000 - (stoppedAt - c.connectedAt))).toBeLessThan(500);
    const stored = await c.store.get(key);
    if (!stored) throw new Error(`${key} is not in the store`);
    const chunks: Buffer[] = [];
    for await (const chunk of stored.body) chunks.push(chunk as Buffer);
    const wav = parseWav(Buffer.concat(chunks));
    expect(wav.sampleRate).toBe(RATE);
    expect(wav.samples.length / RATE).toBeCloseTo(report.duration_seconds, 2);
    // The caller, exactly as sent, on the timeline Twilio stamped (the agent was quiet then).
    const callerPcm = mulawToPcm16(speech);
    const needle = callerPcm.subarray(1600, 2400);
    expect(rms(needle)).toBeGreaterThan(1000);
    const callerAt = indexOf(wav.samples, needle);
    expect(callerAt).toBeGreaterThan(0);
    // The agent: the greeting's tone before the caller spoke, the answer's after. Found by searching rather than at
    // the turns' offsets, which a stalled machine can put hundreds of milliseconds from the audio.
    const greetingAt = firstToneAt(wav.samples, greeting);
    const answerAt = firstToneAt(wav.samples, answer);
    expect(greetingAt).toBeGreaterThanOrEqual(0);
    expect(greetingAt).toBeLessThan(callerAt);
    expect(answerAt).toBeGreaterThan(callerAt);
    await until(() => c.control.heartbeats.find((h) => h.stopped), 'the last heartbeat');
  }, 20_000);
});

/** The first sample of the first 400 ms stretch (searched in 100 ms steps) that carries the tone of `text`; -1 if none. */
function firstToneAt(samples: Int16Array, text: string): number {
  const span = (RATE * 400) / 1000;
  for (let at = 0; at + span <= samples.length; at += RATE / 10) if (carriesToneOf(samples.subarray(at, at + span), text)) return at;
  return -1;
}

function indexOf(haystack: Int16Array, needle: Int16Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
