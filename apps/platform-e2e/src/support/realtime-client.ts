import { WebSocket } from 'ws';
import { mulawToPcm16, Resampler } from '@parley/audio';
import { REALTIME_FRAME_MS, REALTIME_PROTOCOL_VERSION, REALTIME_SAMPLE_RATE, RealtimeServerMessage } from '@parley/contracts';
import { callerSpeechMulaw } from '@parley/speech';

const FRAME_SAMPLES = (REALTIME_SAMPLE_RATE * REALTIME_FRAME_MS) / 1000;

/**
 * A browser on the realtime socket (a web call, or the dev phone's media leg) as the browser client behaves: sends
 * `start` with its token, echoes marks once what came before has "played", streams its microphone as 20 ms PCM
 * frames in real time.
 */
export class RealtimeTestClient {
  readonly received: RealtimeServerMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly ws: WebSocket;
  private readonly opened: Promise<void>;
  private seq = 0;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as RealtimeServerMessage;
      this.received.push(message);
      if (message.type === 'mark') this.send({ type: 'mark', name: message.name });
    });
    this.closed = new Promise((resolve) => this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Opens the socket and presents `token` (naming the call it means to join, when given). */
  async start(token: string, callId?: string): Promise<void> {
    await this.opened;
    this.send({ type: 'start', token, version: REALTIME_PROTOCOL_VERSION, ...(callId ? { call_id: callId } : {}), client: 'e2e' });
  }

  /** Says `text` (the phone-line voice, resampled to 16 kHz) then `trailingMs` of silence, one frame per 20 ms. */
  async speak(text: string, trailingMs = 0): Promise<void> {
    const speech = new Resampler(8000, REALTIME_SAMPLE_RATE).process(mulawToPcm16(callerSpeechMulaw(text)));
    const all = new Int16Array(speech.length + Math.round((trailingMs * REALTIME_SAMPLE_RATE) / 1000));
    all.set(speech);
    for (let at = 0; at < all.length; at += FRAME_SAMPLES) {
      const frame = new Int16Array(FRAME_SAMPLES);
      frame.set(all.subarray(at, at + FRAME_SAMPLES));
      this.send({ type: 'audio', seq: this.seq++, audio: Buffer.from(frame.buffer).toString('base64') });
      await new Promise((r) => setTimeout(r, REALTIME_FRAME_MS));
    }
  }

  send(message: object): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** The transcript turns received so far, as [role, text]. */
  get turns(): [string, string][] {
    return this.received.flatMap((m) => (m.type === 'transcript' ? [[m.role, m.text] as [string, string]] : []));
  }

  /** Loudest sample of the agent's audio received so far. */
  get agentPeak(): number {
    let peak = 0;
    for (const m of this.received) {
      if (m.type !== 'audio') continue;
      const pcm = Buffer.from(m.audio, 'base64');
      for (let i = 0; i + 1 < pcm.length; i += 2) peak = Math.max(peak, Math.abs(pcm.readInt16LE(i)));
    }
    return peak;
  }

  close(): void {
    this.ws.close();
  }
}
