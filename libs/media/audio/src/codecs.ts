import { alaw, mulaw } from 'alawmulaw';
import { endianness } from 'node:os';

/** Wire encodings of telephony audio: G.711 μ-law, G.711 A-law, or signed 16-bit little-endian PCM. */
export type AudioEncoding = 'mulaw' | 'alaw' | 'pcm16';

/** Carriers stream audio in 20 ms frames (160 bytes of μ-law at 8 kHz). */
export const TELEPHONY_FRAME_MS = 20;

const LITTLE_ENDIAN = endianness() === 'LE';

export function mulawToPcm16(buf: Buffer): Int16Array {
  return mulaw.decode(asBytes(buf));
}

export function pcm16ToMulaw(samples: Int16Array): Buffer {
  return asBuffer(mulaw.encode(samples));
}

export function alawToPcm16(buf: Buffer): Int16Array {
  return alaw.decode(asBytes(buf));
}

export function pcm16ToAlaw(samples: Int16Array): Buffer {
  return asBuffer(alaw.encode(samples));
}

/** Reads signed 16-bit little-endian PCM bytes (the `pcm16` wire format) into samples. */
export function pcm16FromBytes(buf: Buffer): Int16Array {
  if (buf.length % 2 !== 0) throw new Error(`PCM16 audio must have an even number of bytes, got ${buf.length}`);
  const samples = new Int16Array(buf.length / 2);
  if (LITTLE_ENDIAN) {
    // Copy rather than view: a Buffer from the pool may sit at an odd offset, which Int16Array cannot view.
    new Uint8Array(samples.buffer).set(buf);
  } else {
    for (let i = 0; i < samples.length; i++) samples[i] = buf.readInt16LE(i * 2);
  }
  return samples;
}

/** Writes samples as signed 16-bit little-endian PCM bytes. */
export function pcm16ToBytes(samples: Int16Array): Buffer {
  if (LITTLE_ENDIAN) return Buffer.from(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  const buf = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) buf.writeInt16LE(samples[i], i * 2);
  return buf;
}

/** Decodes wire audio in any {@link AudioEncoding} to PCM16 samples. */
export function decodeToPcm16(buf: Buffer, encoding: AudioEncoding): Int16Array {
  switch (encoding) {
    case 'mulaw':
      return mulawToPcm16(buf);
    case 'alaw':
      return alawToPcm16(buf);
    case 'pcm16':
      return pcm16FromBytes(buf);
  }
}

/** Encodes PCM16 samples to wire audio in any {@link AudioEncoding}. */
export function encodeFromPcm16(samples: Int16Array, encoding: AudioEncoding): Buffer {
  switch (encoding) {
    case 'mulaw':
      return pcm16ToMulaw(samples);
    case 'alaw':
      return pcm16ToAlaw(samples);
    case 'pcm16':
      return pcm16ToBytes(samples);
  }
}

/** Bytes one mono sample takes on the wire. */
export function bytesPerSample(encoding: AudioEncoding): number {
  return encoding === 'pcm16' ? 2 : 1;
}

/** How many milliseconds `bytes` of mono audio last (160 bytes of μ-law at 8 kHz → 20). */
export function frameDurationMs(bytes: number, encoding: AudioEncoding, sampleRate: number): number {
  if (!(sampleRate > 0)) throw new RangeError(`sampleRate must be positive, got ${sampleRate}`);
  return (bytes / bytesPerSample(encoding) / sampleRate) * 1000;
}

function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
