import { mulawToPcm16, pcm16ToMulaw, powerAt, rms } from '@parley/audio';
import { REALTIME_FRAME_MS, REALTIME_SAMPLE_RATE, RealtimeServerMessage } from '@parley/contracts';

/** `seconds` of a pure tone at `hz` sampled at `rate`. */
export function tone(hz: number, seconds: number, rate: number): Int16Array {
  return Int16Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate)));
}

/** A tone as a phone caller's μ-law 8 kHz audio. */
export function toneMulaw(hz: number, seconds: number): Buffer {
  return pcm16ToMulaw(tone(hz, seconds, 8000));
}

/** Sends a tone on the realtime socket as a browser's microphone would: 20 ms PCM16 frames at 16 kHz, in real time. */
export async function sendRealtimeTone(client: { send(message: object): void }, hz: number, seconds: number): Promise<void> {
  const pcm = tone(hz, seconds, REALTIME_SAMPLE_RATE);
  const frame = (REALTIME_SAMPLE_RATE * REALTIME_FRAME_MS) / 1000;
  const begin = Date.now();
  for (let at = 0, seq = 0; at + frame <= pcm.length; at += frame, seq++) {
    const wait = begin + seq * REALTIME_FRAME_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    client.send({ type: 'audio', seq, audio: Buffer.from(pcm.buffer, pcm.byteOffset + at * 2, frame * 2).toString('base64') });
  }
}

/** The loudest 20 ms frame's RMS, and its index, of μ-law 8 kHz audio. */
export function loudestFrame(mulaw: Buffer): { rms: number; frame: number } {
  let best = { rms: 0, frame: -1 };
  for (let at = 0, frame = 0; at + 160 <= mulaw.length; at += 160, frame++) {
    const level = rms(mulawToPcm16(mulaw.subarray(at, at + 160)));
    if (level > best.rms) best = { rms: level, frame };
  }
  return best;
}

/** The audio frames received on a realtime socket from index `from` on, as one 16 kHz PCM signal. */
export function realtimeAudio(received: RealtimeServerMessage[], from = 0): Int16Array {
  const parts = received.slice(from).flatMap((m) => (m.type === 'audio' ? [Buffer.from(m.audio, 'base64')] : []));
  const bytes = Buffer.concat(parts);
  return Int16Array.from({ length: bytes.length >> 1 }, (_, i) => bytes.readInt16LE(2 * i));
}

/** How much of a signal's power at `hz` stands above a frequency nothing should be at (1 kHz): a tone's signature. */
export function toneRatio(pcm: Int16Array, hz: number, rate: number): number {
  return powerAt(pcm, hz, rate) / Math.max(1, powerAt(pcm, 1000, rate));
}

/** The loudest sample's magnitude. */
export function peakOf(pcm: Int16Array): number {
  let peak = 0;
  for (const s of pcm) peak = Math.max(peak, Math.abs(s));
  return peak;
}
