import { alaw, mulaw } from 'alawmulaw';
import {
  alawToPcm16,
  concatPcm16,
  decodeToPcm16,
  encodeFromPcm16,
  frameDurationMs,
  mulawToPcm16,
  pcm16FromBytes,
  pcm16ToAlaw,
  pcm16ToBytes,
  pcm16ToMulaw,
  TELEPHONY_FRAME_MS,
} from './codecs';

function sine(hz: number, sampleRate: number, count: number, amplitude = 12000): Int16Array {
  return Int16Array.from({ length: count }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / sampleRate)));
}

function maxRelativeError(original: Int16Array, decoded: Int16Array): number {
  let worst = 0;
  for (let i = 0; i < original.length; i++) {
    const error = Math.abs(decoded[i] - original[i]);
    // G.711 is logarithmic: the step grows with the magnitude, so judge error relative to it (floor for near-zero).
    worst = Math.max(worst, error / Math.max(Math.abs(original[i]), 256));
  }
  return worst;
}

describe('G.711 codecs', () => {
  const wave = sine(440, 8000, 800);

  it('encodes silence to the standard code points (μ-law 0xFF, A-law 0xD5) and decodes them back near zero', () => {
    expect([...pcm16ToMulaw(new Int16Array([0, 0]))]).toEqual([0xff, 0xff]);
    expect([...pcm16ToAlaw(new Int16Array([0]))]).toEqual([0xd5]);
    expect(mulawToPcm16(Buffer.from([0xff]))[0]).toBe(0);
    expect(Math.abs(alawToPcm16(Buffer.from([0xd5]))[0])).toBeLessThanOrEqual(8);
  });

  it('decodes the extremes of μ-law to full-scale PCM', () => {
    expect([...mulawToPcm16(Buffer.from([0x00, 0x80]))]).toEqual([-32124, 32124]);
  });

  it('round-trips a sine wave through μ-law with small error', () => {
    const encoded = pcm16ToMulaw(wave);
    expect(encoded).toBeInstanceOf(Buffer);
    expect(encoded.length).toBe(wave.length);
    expect(maxRelativeError(wave, mulawToPcm16(encoded))).toBeLessThan(0.07);
  });

  it('round-trips a sine wave through A-law with small error', () => {
    const encoded = pcm16ToAlaw(wave);
    expect(encoded.length).toBe(wave.length);
    expect(maxRelativeError(wave, alawToPcm16(encoded))).toBeLessThan(0.07);
  });

  it('agrees with the G.711 reference (alawmulaw) on every code byte and every sample value', () => {
    const codes = Buffer.from(Uint8Array.from({ length: 256 }, (_, i) => i));
    const samples = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
    expect([...mulawToPcm16(codes)]).toEqual([...mulaw.decode(codes)]);
    expect([...alawToPcm16(codes)]).toEqual([...alaw.decode(codes)]);
    expect([...pcm16ToMulaw(samples)]).toEqual([...mulaw.encode(samples)]);
    expect([...pcm16ToAlaw(samples)]).toEqual([...alaw.encode(samples)]);
  });

  it('decodes a slice of a larger buffer without reading outside it', () => {
    const big = Buffer.concat([Buffer.from([0x00]), pcm16ToMulaw(new Int16Array([1000, -1000])), Buffer.from([0x00])]);
    const decoded = mulawToPcm16(big.subarray(1, 3));
    expect(decoded.length).toBe(2);
    expect(decoded[0]).toBeGreaterThan(900);
    expect(decoded[1]).toBeLessThan(-900);
  });

  it('reads and writes pcm16 as little-endian bytes, even from an odd buffer offset', () => {
    const bytes = Buffer.from([0x99, 0x01, 0x00, 0xff, 0x7f, 0x00, 0x80]).subarray(1);
    const samples = pcm16FromBytes(bytes);
    expect([...samples]).toEqual([1, 32767, -32768]);
    expect(pcm16ToBytes(samples)).toEqual(bytes);
    expect(() => pcm16FromBytes(Buffer.alloc(3))).toThrow(/even number of bytes/);
  });

  it('dispatches on the wire encoding', () => {
    for (const encoding of ['mulaw', 'alaw', 'pcm16'] as const) {
      const decoded = decodeToPcm16(encodeFromPcm16(wave, encoding), encoding);
      expect(maxRelativeError(wave, decoded)).toBeLessThan(encoding === 'pcm16' ? 1e-9 : 0.07);
    }
  });
});

describe('frameDurationMs', () => {
  it('measures telephony frames', () => {
    expect(TELEPHONY_FRAME_MS).toBe(20);
    expect(frameDurationMs(160, 'mulaw', 8000)).toBe(TELEPHONY_FRAME_MS);
    expect(frameDurationMs(160, 'alaw', 8000)).toBe(20);
    expect(frameDurationMs(640, 'pcm16', 16000)).toBe(20);
    expect(frameDurationMs(882, 'pcm16', 22050)).toBe(20);
    expect(frameDurationMs(0, 'mulaw', 8000)).toBe(0);
  });

  it('refuses a non-positive sample rate', () => {
    expect(() => frameDurationMs(160, 'mulaw', 0)).toThrow(RangeError);
  });
});

describe('concatPcm16', () => {
  it('joins pieces in order', () => {
    const joined = concatPcm16([Int16Array.of(1, 2), Int16Array.of(3), Int16Array.of(-4, 5)], 5);
    expect(Array.from(joined)).toEqual([1, 2, 3, -4, 5]);
  });

  it('returns a single piece without copying it', () => {
    const piece = Int16Array.of(7, 8);
    expect(concatPcm16([piece], 2)).toBe(piece);
  });
});
