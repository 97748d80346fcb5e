import { alaw, mulaw } from 'alawmulaw';
import { endianness } from 'node:os';

/** Wire encodings of telephony audio: G.711 μ-law, G.711 A-law, or signed 16-bit little-endian PCM. */
export type AudioEncoding = 'mulaw' | 'alaw' | 'pcm16';

/** Carriers stream audio in 20 ms frames (160 bytes of μ-law at 8 kHz). */
export const TELEPHONY_FRAME_MS = 20;

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * G.711 as lookup tables computed once from alawmulaw: every frame of every call goes through these, and a table
 * read per sample costs a fraction of the library's per-sample arithmetic and allocates nothing but the output.
 */
interface G711Table {
  /** Code byte → sample. */
  decode: Int16Array;
  /** Sample + 32768 → code byte. */
  encode: Uint8Array;
}

function g711Table(codec: { encode(samples: Int16Array): Uint8Array; decode(bytes: Uint8Array): Int16Array }): G711Table {
  const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
  const samples = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
  return { decode: codec.decode(codes), encode: codec.encode(samples) };
}

const MULAW = g711Table(mulaw);
const ALAW = g711Table(alaw);

function g711Decode(table: G711Table, buf: Buffer): Int16Array {
  const out = new Int16Array(buf.length);
  for (let i = 0; i < buf.length; i++) out[i] = table.decode[buf[i]];
  return out;
}

function g711Encode(table: G711Table, samples: Int16Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = table.encode[samples[i] + 32768];
  return out;
}

export function mulawToPcm16(buf: Buffer): Int16Array {
  return g711Decode(MULAW, buf);
}

export function pcm16ToMulaw(samples: Int16Array): Buffer {
  return g711Encode(MULAW, samples);
}

export function alawToPcm16(buf: Buffer): Int16Array {
  return g711Decode(ALAW, buf);
}

export function pcm16ToAlaw(samples: Int16Array): Buffer {
  return g711Encode(ALAW, samples);
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

/** Pieces of PCM16 as one array of `total` samples (their summed length); a single piece is returned as it is. */
export function concatPcm16(pieces: Int16Array[], total: number): Int16Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Int16Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
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
