import { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { FakeDeepgramServer } from './fake-deepgram-server';

const RATE = 16_000;

function pcm(kind: 'tone' | 'silence', ms: number): Buffer {
  const n = (RATE * ms) / 1000;
  const buf = Buffer.alloc(n * 2);
  if (kind === 'tone') for (let i = 0; i < n; i++) buf.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / RATE)), i * 2);
  return buf;
}

/** A raw client, to check the wire protocol without the SDK in between. */
async function connect(base: string, query: string, key = 'k'): Promise<{ ws: WebSocket; messages: Array<Record<string, unknown>> }> {
  const ws = new WebSocket(`${base}/v1/listen?${query}`, { headers: { Authorization: `Token ${key}` } });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data)) as Record<string, unknown>));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, messages };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('FakeDeepgramServer', () => {
  let server: FakeDeepgramServer;
  let base: string;

  beforeEach(async () => {
    server = new FakeDeepgramServer({ apiKey: 'k' });
    base = await server.start();
  });

  afterEach(() => server.stop());

  it('refuses an upgrade without the right Token with 401 and a Deepgram error body', async () => {
    const ws = new WebSocket(`${base}/v1/listen`, { headers: { Authorization: 'Token nope' } });
    ws.on('error', () => undefined);

    const [status, body] = await new Promise<[number | undefined, string]>((resolve) => {
      ws.on('unexpected-response', (_req, res: IncomingMessage) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve([res.statusCode, text]));
      });
    });

    expect(status).toBe(401);
    expect(JSON.parse(body)).toMatchObject({ err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.' });
    expect(server.refused).toEqual([401]);
  });

  it('answers a speech segment with SpeechStarted, interim and final Results, and UtteranceEnd', async () => {
    server.utterances('Hello world');
    const { ws, messages } = await connect(
      base,
      'model=nova-3&encoding=linear16&sample_rate=16000&channels=1&interim_results=true&utterance_end_ms=1000&vad_events=true',
    );

    ws.send(pcm('silence', 500));
    ws.send(pcm('tone', 1000));
    ws.send(pcm('silence', 500));
    await until(() => messages.length === 4, 'four messages');

    expect(messages.map((m) => m.type)).toEqual(['SpeechStarted', 'Results', 'Results', 'UtteranceEnd']);
    expect(messages[0]).toEqual({ type: 'SpeechStarted', channel: [0], timestamp: 0.5 });
    expect(messages[1]).toMatchObject({ is_final: false, speech_final: false, start: 0.5, duration: 1 });
    expect(messages[2]).toMatchObject({
      type: 'Results',
      channel_index: [0, 1],
      start: 0.5,
      duration: 1,
      is_final: true,
      speech_final: true,
      from_finalize: false,
      channel: {
        alternatives: [
          {
            transcript: 'Hello world',
            words: [
              { word: 'hello', start: 0.5, end: 1, punctuated_word: 'Hello' },
              { word: 'world', start: 1, end: 1.5, punctuated_word: 'world' },
            ],
          },
        ],
      },
      metadata: { request_id: server.lastConnection?.requestId, model_info: { arch: 'nova-3' } },
    });
    expect(messages[3]).toEqual({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 1.5 });
    expect(server.lastConnection?.params).toMatchObject({ model: 'nova-3', sample_rate: '16000', vad_events: 'true' });
    expect(server.lastConnection?.audioBytes).toBe(RATE * 2 * 2);
    ws.close();
  });

  it('answers CloseStream with Metadata and a normal close, recording control messages', async () => {
    const { ws, messages } = await connect(base, 'encoding=linear16&sample_rate=16000');
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));

    ws.send(JSON.stringify({ type: 'KeepAlive' }));
    ws.send(pcm('silence', 250));
    ws.send(JSON.stringify({ type: 'CloseStream' }));

    expect(await closed).toBe(1000);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ type: 'Metadata', request_id: server.lastConnection?.requestId, duration: 0.25, channels: 1 });
    expect(server.lastConnection?.controlMessages).toEqual([{ type: 'KeepAlive' }, { type: 'CloseStream' }]);
    await until(() => server.lastConnection?.closeCode !== undefined, 'the server side of the close');
    expect(server.lastConnection?.closeCode).toBe(1000);
  });

  it('refuses encodings it cannot decode', async () => {
    await expect(connect(base, 'encoding=mulaw&sample_rate=8000')).rejects.toThrow(/400/);
  });
});
