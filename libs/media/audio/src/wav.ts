import { pcm16FromBytes, pcm16ToBytes } from './codecs';

export interface ParsedWav {
  sampleRate: number;
  channels: number;
  bitsPerSample: 16;
  /** Interleaved when channels > 1. */
  samples: Int16Array;
}

const HEADER_BYTES = 44;
const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

/** The canonical 44-byte RIFF/WAVE header for `dataBytes` of little-endian PCM. */
export function wavHeader(dataBytes: number, sampleRate: number, channels: number, bitsPerSample: 16): Buffer {
  if (!Number.isInteger(dataBytes) || dataBytes < 0 || dataBytes > 0xffffffff - 36) {
    throw new RangeError(`WAV data size out of range: ${dataBytes}`);
  }
  const blockAlign = channels * (bitsPerSample / 8);
  const header = Buffer.alloc(HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(WAVE_FORMAT_PCM, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(bitsPerSample, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/** A mono 16-bit PCM WAV file of `samples`. */
export function encodeWav(samples: Int16Array, sampleRate: number): Buffer {
  return Buffer.concat([wavHeader(samples.byteLength, sampleRate, 1, 16), pcm16ToBytes(samples)]);
}

/** Reads a 16-bit PCM WAV file; skips chunks it does not need (LIST, fact, …) and refuses other formats. */
export function parseWav(buf: Buffer): ParsedWav {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new Error('Not a WAV file: missing RIFF/WAVE header');
  }
  let format: { sampleRate: number; channels: number; bitsPerSample: number } | undefined;
  for (let at = 12; at + 8 <= buf.length; ) {
    const id = buf.toString('ascii', at, at + 4);
    const body = at + 8;
    // Streaming writers leave the size at 0 or 0xFFFFFFFF; take what is there.
    const size = Math.min(buf.readUInt32LE(at + 4), buf.length - body);
    if (id === 'fmt ') {
      if (size < 16) throw new Error('Invalid WAV file: fmt chunk too short');
      const audioFormat = buf.readUInt16LE(body);
      const pcm =
        audioFormat === WAVE_FORMAT_PCM ||
        // WAVE_FORMAT_EXTENSIBLE's sub-format GUID starts with the format code.
        (audioFormat === WAVE_FORMAT_EXTENSIBLE && size >= 40 && buf.readUInt16LE(body + 24) === WAVE_FORMAT_PCM);
      if (!pcm) throw new Error(`Unsupported WAV encoding (format ${audioFormat}): only PCM is supported`);
      format = {
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        bitsPerSample: buf.readUInt16LE(body + 14),
      };
      if (format.bitsPerSample !== 16) {
        throw new Error(`Unsupported WAV sample size: ${format.bitsPerSample} bits (only 16-bit PCM is supported)`);
      }
      if (format.channels < 1) throw new Error('Invalid WAV file: no channels');
    } else if (id === 'data') {
      if (!format) throw new Error('Invalid WAV file: data chunk before fmt chunk');
      const usable = size - (size % (2 * format.channels));
      return {
        sampleRate: format.sampleRate,
        channels: format.channels,
        bitsPerSample: 16,
        samples: pcm16FromBytes(buf.subarray(body, body + usable)),
      };
    }
    // Chunks are padded to an even size.
    at = body + size + (size % 2);
  }
  throw new Error(format ? 'Invalid WAV file: no data chunk' : 'Invalid WAV file: no fmt chunk');
}
