import { TwilioMediaStreamProtocol } from './twilio-media-stream';

// The sample messages of https://www.twilio.com/docs/voice/media-streams/websocket-messages.
const STREAM_SID = 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX';
// Twilio's sample payload is elided ("no+JhoaJjpz…"): a 20 ms frame of μ-law stands in.
const FRAME = Buffer.from(Array.from({ length: 160 }, (_, i) => (i * 37) & 0xff));
const CONNECTED = { event: 'connected', protocol: 'Call', version: '1.0.0' };
const START = {
  event: 'start',
  sequenceNumber: '1',
  start: {
    accountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
    streamSid: STREAM_SID,
    callSid: 'CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
    tracks: ['inbound', 'outbound'],
    customParameters: { FirstName: 'Jane', LastName: 'Doe', RemoteParty: 'Bob' },
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
  },
  streamSid: STREAM_SID,
};
const MEDIA = {
  event: 'media',
  sequenceNumber: '3',
  media: { track: 'inbound', chunk: '1', timestamp: '5', payload: FRAME.toString('base64') },
  streamSid: STREAM_SID,
};
const DTMF = { event: 'dtmf', streamSid: STREAM_SID, sequenceNumber: '5', dtmf: { track: 'inbound_track', digit: '1' } };
const MARK = { event: 'mark', sequenceNumber: '4', streamSid: STREAM_SID, mark: { name: 'my label' } };
const STOP = {
  event: 'stop',
  sequenceNumber: '5',
  stop: { accountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX', callSid: 'CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' },
  streamSid: STREAM_SID,
};

describe('TwilioMediaStreamProtocol', () => {
  const protocol = new TwilioMediaStreamProtocol();
  const parse = (message: unknown) => protocol.parse(JSON.stringify(message));

  it('is the twilio carrier', () => {
    expect(protocol.carrier).toBe('twilio');
  });

  it('parses connected', () => {
    expect(parse(CONNECTED)).toEqual({ type: 'connected' });
  });

  it('parses start: stream and call sids, custom parameters, μ-law 8 kHz mono', () => {
    expect(parse(START)).toEqual({
      type: 'start',
      streamId: STREAM_SID,
      carrierCallId: 'CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      parameters: { FirstName: 'Jane', LastName: 'Doe', RemoteParty: 'Bob' },
      format: { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
    });
  });

  it('reads a start without customParameters as no parameters', () => {
    const { customParameters: _dropped, ...start } = START.start;
    expect(parse({ ...START, start })).toMatchObject({ type: 'start', parameters: {} });
  });

  it('parses inbound media: decoded payload and the string timestamp as ms', () => {
    const event = parse(MEDIA);
    expect(event).toEqual({ type: 'audio', payload: Buffer.from(MEDIA.media.payload, 'base64'), timestampMs: 5 });
    expect(event?.type === 'audio' && event.payload.length).toBe(160);
  });

  it('reads a media frame the same in Twilio\'s own shape and in any other key order or spacing', () => {
    const reordered = JSON.stringify({ streamSid: STREAM_SID, media: { payload: MEDIA.media.payload, timestamp: '5', track: 'inbound', chunk: '1' }, event: 'media', sequenceNumber: '3' });
    const spaced = JSON.stringify(MEDIA, null, 1);

    expect(protocol.parse(reordered)).toEqual(parse(MEDIA));
    expect(protocol.parse(spaced)).toEqual(parse(MEDIA));
    expect(protocol.parse(JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, track: 'outbound' } }))).toBeUndefined();
  });

  it('ignores media of the outbound track', () => {
    expect(parse({ ...MEDIA, media: { ...MEDIA.media, track: 'outbound' } })).toBeUndefined();
  });

  it('parses dtmf, mark and stop', () => {
    expect(parse(DTMF)).toEqual({ type: 'dtmf', digit: '1' });
    expect(parse(MARK)).toEqual({ type: 'mark', name: 'my label' });
    expect(parse(STOP)).toEqual({ type: 'stop' });
  });

  it('returns undefined for events it does not use', () => {
    expect(parse({ event: 'somethingNew', streamSid: STREAM_SID })).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"event":', /not JSON/],
    ['not an object', '[1,2]', /not a JSON object/],
    ['without event', '{"streamSid":"MZ1"}', /without event/],
    ['start without start', JSON.stringify({ ...START, start: undefined }), /start without start/],
    ['start without callSid', JSON.stringify({ ...START, start: { ...START.start, callSid: undefined } }), /start without callSid/],
    ['start without mediaFormat', JSON.stringify({ ...START, start: { ...START.start, mediaFormat: undefined } }), /without mediaFormat/],
    [
      'start with another encoding',
      JSON.stringify({ ...START, start: { ...START.start, mediaFormat: { encoding: 'audio/x-l16', sampleRate: 8000, channels: 1 } } }),
      /unsupported mediaFormat.encoding "audio\/x-l16"/,
    ],
    [
      'start with a non-string parameter',
      JSON.stringify({ ...START, start: { ...START.start, customParameters: { token: 1 } } }),
      /non-string customParameters.token/,
    ],
    ['media without media', JSON.stringify({ ...MEDIA, media: undefined }), /media without media/],
    ['media without payload', JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, payload: undefined } }), /media without payload/],
    ...['not base64!', 'AA A', 'A===', '=AAA', 'AAAAA', 'AA\nA'].map((payload): [string, string, RegExp] => [
      `media with the non-base64 payload ${JSON.stringify(payload)}`,
      JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, payload } }),
      /not base64/,
    ]),
    ['media without timestamp', JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, timestamp: undefined } }), /media without timestamp/],
    ['media with a bad timestamp', JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, timestamp: '-3' } }), /invalid timestamp "-3"/],
    ['media with a timestamp past 2^53', JSON.stringify({ ...MEDIA, media: { ...MEDIA.media, timestamp: '9007199254740993' } }), /invalid timestamp "9007199254740993"/],
    ['media with a raw control character in its payload (not JSON)', JSON.stringify(MEDIA).replace('"payload":"', '"payload":"\n'), /not JSON/],
    ['dtmf without digit', JSON.stringify({ ...DTMF, dtmf: { track: 'inbound_track' } }), /dtmf without digit/],
    ['mark without name', JSON.stringify({ ...MARK, mark: {} }), /mark without name/],
  ])('throws on a frame %s', (_what, frame, message) => {
    expect(() => protocol.parse(frame)).toThrow(message);
  });

  it('writes media, mark and clear as Twilio reads them', () => {
    const payload = Buffer.from([0xff, 0x7f, 0x00, 0x80]);
    expect(JSON.parse(protocol.audio(STREAM_SID, payload))).toEqual({
      event: 'media',
      streamSid: STREAM_SID,
      media: { payload: payload.toString('base64') },
    });
    expect(JSON.parse(protocol.mark(STREAM_SID, 'my label'))).toEqual({
      event: 'mark',
      streamSid: STREAM_SID,
      mark: { name: 'my label' },
    });
    expect(JSON.parse(protocol.clear(STREAM_SID))).toEqual({ event: 'clear', streamSid: STREAM_SID });
  });

  it('refuses outbound frames without a streamSid or mark name', () => {
    expect(() => protocol.audio('', Buffer.alloc(1))).toThrow(/streamSid is required/);
    expect(() => protocol.mark(STREAM_SID, '')).toThrow(/mark name is required/);
  });
});
