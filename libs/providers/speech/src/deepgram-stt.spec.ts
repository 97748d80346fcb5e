import { DeepgramSpeechToText, DeepgramSpeechToTextOptions } from './deepgram-stt';
import { SpeechError } from './speech-error';
import { SttEvent, SttStream } from './speech-to-text';
import { FakeDeepgramServer } from './testing/fake-deepgram-server';

const RATE = 8000;
const KEY = 'dg-test-key';

/** 20 ms frames of a 440 Hz tone (speech, to an energy detector) or of silence. */
function frames(kind: 'tone' | 'silence', ms: number): Int16Array[] {
  const out: Int16Array[] = [];
  const perFrame = RATE / 50;
  for (let f = 0; f < ms / 20; f++) {
    const frame = new Int16Array(perFrame);
    if (kind === 'tone') {
      for (let i = 0; i < perFrame; i++) frame[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * perFrame + i)) / RATE));
    }
    out.push(frame);
  }
  return out;
}

async function until(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DeepgramSpeechToText against a Deepgram-protocol server', () => {
  let server: FakeDeepgramServer;
  let baseUrl: string;
  let events: SttEvent[];
  let errors: SpeechError[];
  let stream: SttStream | undefined;

  beforeEach(async () => {
    server = new FakeDeepgramServer({ apiKey: KEY });
    baseUrl = await server.start();
    events = [];
    errors = [];
    stream = undefined;
  });

  afterEach(async () => {
    await stream?.close();
    await server.stop();
  });

  const open = async (options: Partial<DeepgramSpeechToTextOptions> = {}, model?: string) => {
    const stt = new DeepgramSpeechToText({ apiKey: KEY, baseUrl, ...options });
    stream = await stt.open(
      { language: 'en-US', sampleRate: RATE, ...(model ? { model } : {}) },
      { onTranscript: (event) => events.push(event), onError: (error) => errors.push(error) },
    );
    return stream;
  };
  const write = (s: SttStream, audio: Int16Array[]) => audio.forEach((frame) => s.write(frame));

  it('opens a linear16 mono stream at the sample rate with interim results and endpointing', async () => {
    await open({ endpointingMs: 250, utteranceEndMs: 1200 });

    expect(server.connections).toHaveLength(1);
    expect(server.lastConnection?.url.split('?')[0]).toBe('/v1/listen');
    expect(server.lastConnection?.headers.authorization).toBe(`Token ${KEY}`);
    expect(server.lastConnection?.params).toMatchObject({
      model: 'nova-3',
      language: 'en-US',
      encoding: 'linear16',
      sample_rate: '8000',
      channels: '1',
      interim_results: 'true',
      endpointing: '250',
      utterance_end_ms: '1200',
    });
  });

  it('uses the model the stream names over the default', async () => {
    await open({ model: 'nova-2' }, 'nova-2-phonecall');

    expect(server.lastConnection?.params.model).toBe('nova-2-phonecall');
  });

  it('reports a tone burst followed by silence as a partial, then a final that ends the turn', async () => {
    server.utterances('I would like to book a table.');
    const s = await open();

    write(s, [...frames('silence', 200), ...frames('tone', 400), ...frames('silence', 600)]);
    await until(() => events.some((e) => e.type === 'final'), 'the final');
    // The UtteranceEnd that follows a speech_final must not end the turn a second time.
    await until(() => server.lastConnection?.sent.some((m) => m.type === 'UtteranceEnd') ?? false, 'UtteranceEnd');
    await sleep(50);

    expect(events).toEqual([
      { type: 'partial', text: 'I would like to book a table.' },
      { type: 'final', text: 'I would like to book a table.', endOfTurn: true },
    ]);
    expect(server.lastConnection?.audioBytes).toBe(60 * (RATE / 50) * 2);
    expect(errors).toEqual([]);
  });

  it('answers each speech segment with the next scripted utterance', async () => {
    server.utterances('Yes.', 'Tomorrow at eight.');
    const s = await open();

    write(s, [...frames('tone', 200), ...frames('silence', 400), ...frames('tone', 300), ...frames('silence', 400)]);
    await until(() => events.filter((e) => e.type === 'final').length === 2, 'two finals');

    expect(events.filter((e) => e.type === 'final').map((e) => e.text)).toEqual(['Yes.', 'Tomorrow at eight.']);
  });

  it('finalize sends Finalize and makes the settled speech the end of the turn', async () => {
    server.utterances('Cancel my order');
    const s = await open();

    write(s, frames('tone', 300));
    s.finalize();
    await until(() => events.some((e) => e.type === 'final'), 'the final');

    expect(server.lastConnection?.controlMessages).toContainEqual({ type: 'Finalize' });
    // Deepgram marks a finalized result from_finalize, not speech_final: the adapter still ends the turn.
    expect(server.lastConnection?.sent.find((m) => m.type === 'Results' && m.is_final)).toMatchObject({
      from_finalize: true,
      speech_final: false,
    });
    expect(events[events.length - 1]).toEqual({ type: 'final', text: 'Cancel my order', endOfTurn: true });
  });

  it('sends audio in messages of at least 50 ms, and what it holds on Finalize and CloseStream', async () => {
    const s = await open();
    const bytesPerMs = (RATE / 1000) * 2;

    write(s, frames('tone', 220));
    await until(() => server.lastConnection?.audioMessages.length === 3, 'three messages');
    s.finalize();
    await until(() => server.lastConnection?.controlMessages.some((m) => m.type === 'Finalize') ?? false, 'Finalize');
    const beforeFinalize = [...(server.lastConnection?.audioMessages ?? [])];
    write(s, frames('tone', 40));
    await s.close();
    await until(() => server.lastConnection?.controlMessages.some((m) => m.type === 'CloseStream') ?? false, 'CloseStream');

    expect(beforeFinalize).toEqual([60, 60, 60, 40].map((ms) => ms * bytesPerMs));
    expect(server.lastConnection?.audioMessages).toEqual([60, 60, 60, 40, 40].map((ms) => ms * bytesPerMs));
  });

  it('sends a write of 50 ms or more as one message, with what it held before it', async () => {
    const s = await open();
    const bytesPerMs = (RATE / 1000) * 2;
    const piece = (ms: number) => {
      const out = new Int16Array((RATE * ms) / 1000);
      frames('tone', ms).forEach((f, i) => out.set(f, i * f.length));
      return out;
    };

    write(s, frames('tone', 20));
    s.write(piece(260));
    s.write(piece(260));
    await until(() => server.lastConnection?.audioMessages.length === 2, 'two messages');

    expect(server.lastConnection?.audioMessages).toEqual([280, 260].map((ms) => ms * bytesPerMs));
  });

  it('finalize with no speech reports an empty end of turn', async () => {
    const s = await open();

    write(s, frames('silence', 200));
    s.finalize();
    await until(() => events.length > 0, 'an event');

    expect(events).toEqual([{ type: 'final', text: '', endOfTurn: true }]);
  });

  it('finalize reports an empty end of turn when Deepgram does not answer it', async () => {
    server.answerFinalize = false;
    const s = await open({ finalizeTimeoutMs: 100 });

    s.finalize();
    await until(() => events.length > 0, 'an event');

    expect(events).toEqual([{ type: 'final', text: '', endOfTurn: true }]);
  });

  it('ends a turn on UtteranceEnd only when settled words are waiting for it', async () => {
    await open();
    const result = (transcript: string, speechFinal: boolean) => ({
      type: 'Results',
      channel_index: [0, 1],
      start: 0,
      duration: 1,
      is_final: true,
      speech_final: speechFinal,
      channel: { alternatives: [{ transcript, confidence: 0.9, words: [] }] },
    });

    server.sendToClients(result('I want to', false));
    server.sendToClients({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 1 });
    server.sendToClients({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 1 });
    server.sendToClients(result('', false));
    server.sendToClients(result('', true));
    server.sendToClients({ type: 'SpeechStarted', channel: [0], timestamp: 2 });
    server.sendToClients(result('change it', true));
    await until(() => events.length === 3, 'three events');
    await sleep(30);

    expect(events).toEqual([
      { type: 'final', text: 'I want to', endOfTurn: false },
      { type: 'final', text: '', endOfTurn: true },
      { type: 'final', text: 'change it', endOfTurn: true },
    ]);
  });

  it('sends KeepAlive while the stream is open, which keeps Deepgram from closing it', async () => {
    await server.stop();
    server = new FakeDeepgramServer({ apiKey: KEY, idleTimeoutMs: 150 });
    baseUrl = await server.start();
    await open({ keepAliveMs: 40 });

    await sleep(400);

    const keepAlives = server.lastConnection?.controlMessages.filter((m) => m.type === 'KeepAlive') ?? [];
    expect(keepAlives.length).toBeGreaterThanOrEqual(5);
    expect(errors).toEqual([]);
    expect(server.lastConnection?.closeCode).toBeUndefined();
  });

  it('reports Deepgram closing an idle stream as a connection error', async () => {
    await server.stop();
    server = new FakeDeepgramServer({ apiKey: KEY, idleTimeoutMs: 50 });
    baseUrl = await server.start();
    await open();

    await until(() => errors.length > 0, 'an error');

    expect(errors[0]).toBeInstanceOf(SpeechError);
    expect(errors[0]).toMatchObject({ code: 'connection', provider: 'deepgram' });
    expect(errors[0].message).toContain('1011');
  });

  it('close sends CloseStream, and no event follows', async () => {
    server.utterances('too late');
    const s = await open();
    write(s, frames('tone', 300));

    await s.close();
    await until(() => server.lastConnection?.closeCode !== undefined, 'the close');
    server.sendToClients({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 1 });
    await sleep(30);

    expect(server.lastConnection?.controlMessages).toContainEqual({ type: 'CloseStream' });
    expect(events).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('rejects open with an http SpeechError when the key is refused at the upgrade', async () => {
    const attempt = open({ apiKey: 'wrong-key' });

    await expect(attempt).rejects.toBeInstanceOf(SpeechError);
    await expect(attempt).rejects.toMatchObject({ code: 'http', status: 401, provider: 'deepgram' });
    expect(server.refused).toEqual([401]);
    expect(server.connections).toEqual([]);
  });

  it('rejects open with the status Deepgram answered the upgrade with', async () => {
    server.failNextConnection(503);

    await expect(open()).rejects.toMatchObject({ code: 'http', status: 503, provider: 'deepgram' });
    // One attempt only: the SDK's reconnection is off.
    expect(server.refused).toEqual([503]);
  });

  it('rejects open with a connection SpeechError when nothing listens', async () => {
    await server.stop();

    await expect(open()).rejects.toMatchObject({ code: 'connection', provider: 'deepgram' });
  });

  it('reports a dropped connection through onError, once', async () => {
    const s = await open();

    server.dropConnection();
    await until(() => errors.length > 0, 'an error');
    s.write(frames('tone', 20)[0]);
    s.finalize();
    await sleep(50);

    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SpeechError);
    expect(errors[0]).toMatchObject({ code: 'connection', provider: 'deepgram' });
    expect(server.connections).toHaveLength(1);
  });
});
