import { encodeWav, parseWav, wavHeader } from './wav';

function chunk(id: string, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 'ascii');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body, body.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

function fmt(format: number, channels: number, sampleRate: number, bits: number): Buffer {
  const body = Buffer.alloc(16);
  body.writeUInt16LE(format, 0);
  body.writeUInt16LE(channels, 2);
  body.writeUInt32LE(sampleRate, 4);
  body.writeUInt32LE((sampleRate * channels * bits) / 8, 8);
  body.writeUInt16LE((channels * bits) / 8, 12);
  body.writeUInt16LE(bits, 14);
  return chunk('fmt ', body);
}

function riff(...chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from('WAVE', 'ascii'), ...chunks]);
  const header = Buffer.alloc(8);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

describe('WAV', () => {
  it('writes the canonical 44-byte PCM header', () => {
    const header = wavHeader(320, 8000, 1, 16);
    expect(header.length).toBe(44);
    expect(header.toString('ascii', 0, 4)).toBe('RIFF');
    expect(header.readUInt32LE(4)).toBe(36 + 320);
    expect(header.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(header.readUInt16LE(20)).toBe(1);
    expect(header.readUInt16LE(22)).toBe(1);
    expect(header.readUInt32LE(24)).toBe(8000);
    expect(header.readUInt32LE(28)).toBe(16000);
    expect(header.readUInt16LE(32)).toBe(2);
    expect(header.readUInt16LE(34)).toBe(16);
    expect(header.toString('ascii', 36, 40)).toBe('data');
    expect(header.readUInt32LE(40)).toBe(320);
  });

  it('round-trips samples through encodeWav and parseWav', () => {
    const samples = new Int16Array([0, 1, -1, 32767, -32768, 1234, -4321]);
    const wav = encodeWav(samples, 16000);
    expect(wav.length).toBe(44 + samples.length * 2);
    expect(parseWav(wav)).toEqual({ sampleRate: 16000, channels: 1, bitsPerSample: 16, samples });
  });

  it('skips unknown chunks such as LIST, including odd-sized ones with their pad byte', () => {
    const data = Buffer.from([0x01, 0x00, 0xff, 0xff, 0x00, 0x80, 0x10, 0x00]);
    const wav = riff(chunk('LIST', Buffer.from('INFOISFT\x03\x00\x00\x00ab\x00')), fmt(1, 2, 8000, 16), chunk('data', data));
    expect(parseWav(wav)).toEqual({
      sampleRate: 8000,
      channels: 2,
      bitsPerSample: 16,
      samples: new Int16Array([1, -1, -32768, 16]),
    });
  });

  it('reads a data chunk whose size a streaming writer left unset', () => {
    const wav = encodeWav(new Int16Array([5, 6, 7]), 8000);
    wav.writeUInt32LE(0xffffffff, 40);
    expect([...parseWav(wav).samples]).toEqual([5, 6, 7]);
  });

  it('refuses what is not 16-bit PCM WAV, saying why', () => {
    expect(() => parseWav(Buffer.from('not a wav file at all'))).toThrow(/Not a WAV file/);
    expect(() => parseWav(riff(fmt(7, 1, 8000, 8), chunk('data', Buffer.alloc(4))))).toThrow(/only PCM/);
    expect(() => parseWav(riff(fmt(1, 1, 8000, 8), chunk('data', Buffer.alloc(4))))).toThrow(/8 bits.*16-bit/);
    expect(() => parseWav(riff(chunk('data', Buffer.alloc(4))))).toThrow(/data chunk before fmt/);
    expect(() => parseWav(riff(fmt(1, 1, 8000, 16)))).toThrow(/no data chunk/);
  });
});
