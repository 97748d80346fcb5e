import { REALTIME_CLOSE, REALTIME_SAMPLE_RATE, REALTIME_SIGNAL_MAX_BYTES } from '@parley/contracts';
import { browserMediaProtocol } from './browser-media-stream';

const web = browserMediaProtocol('web');
const dev = browserMediaProtocol('dev');
const notice = (n: Parameters<NonNullable<typeof web.notice>>[1]) => (web.notice as NonNullable<typeof web.notice>)('s', n);
const refusal = (why: string, message: string) => (web.refusal as NonNullable<typeof web.refusal>)(why, message);
const start = (extra: Record<string, unknown> = {}) => JSON.stringify({ type: 'start', token: 'rtk_abc.def', version: 1, ...extra });

describe('the browser media protocol', () => {
  it('reads start as a 16 kHz PCM stream carrying the token, with the call the client names', () => {
    const event = web.parse(start({ call_id: 'call_1' }));
    expect(event).toMatchObject({
      type: 'start',
      carrierCallId: 'call_1',
      parameters: { token: 'rtk_abc.def' },
      format: { encoding: 'pcm16', sampleRate: REALTIME_SAMPLE_RATE, channels: 1 },
    });
    expect(event?.type === 'start' && event.streamId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('gives every stream an id of its own', () => {
    const ids = new Set([0, 1, 2].map(() => web.parse(start())).map((e) => (e?.type === 'start' ? e.streamId : '')));
    expect(ids.size).toBe(3);
  });

  it('refuses an API key before it travels anywhere, on both protocols', () => {
    for (const protocol of [web, dev]) {
      expect(protocol.parse(start({ token: 'vsk_live_secret' }))).toEqual({ type: 'refuse', refusal: 'token_invalid', message: expect.stringContaining('API key') });
    }
  });

  it('refuses on the realtime path a token that is not a realtime token, but takes the dev carrier’s stream token', () => {
    expect(web.parse(start({ token: 'eyJhbGciOi.x' }))).toMatchObject({ type: 'refuse', refusal: 'token_invalid' });
    expect(dev.parse(start({ token: 'eyJhbGciOi.x', call_id: 'call_9' }))).toMatchObject({ type: 'start', carrierCallId: '', parameters: { token: 'eyJhbGciOi.x' } });
  });

  it('refuses a protocol version it does not speak', () => {
    expect(web.parse(start({ version: 2 }))).toMatchObject({ type: 'refuse', refusal: 'bad_request' });
  });

  it('places audio frames on the call’s timeline by their sequence number', () => {
    const pcm = Buffer.from([1, 0, 2, 0]);
    expect(web.parse(JSON.stringify({ type: 'audio', seq: 3, audio: pcm.toString('base64') }))).toEqual({ type: 'audio', payload: pcm, timestampMs: 60 });
    expect(() => web.parse(JSON.stringify({ type: 'audio', audio: 'AA==' }))).toThrow(/seq/);
  });

  it('reads keypresses, mark echoes and hang-up, and throws on a digit that is not one', () => {
    expect(web.parse('{"type":"dtmf","digit":"#"}')).toEqual({ type: 'dtmf', digit: '#' });
    expect(() => web.parse('{"type":"dtmf","digit":"12"}')).toThrow(/digit/);
    expect(web.parse('{"type":"mark","name":"m1"}')).toEqual({ type: 'mark', name: 'm1' });
    expect(web.parse('{"type":"hangup"}')).toEqual({ type: 'stop' });
    expect(web.parse('{"type":"later-feature"}')).toBeUndefined();
  });

  it('writes audio, marks, clears and notices as the client reads them', () => {
    expect(JSON.parse(web.audio('s', Buffer.from([1, 2])))).toEqual({ type: 'audio', audio: 'AQI=' });
    expect(JSON.parse(web.mark('s', 'm'))).toEqual({ type: 'mark', name: 'm' });
    expect(JSON.parse(web.clear('s'))).toEqual({ type: 'clear' });
    expect(JSON.parse(notice({ type: 'call-start', callId: 'call_1', agentId: 'agt_1', direction: 'web', sampleRate: 16000 }))).toEqual({
      type: 'call-start',
      call_id: 'call_1',
      agent_id: 'agt_1',
      direction: 'web',
      sample_rate: 16000,
      frame_ms: 20,
    });
    expect(JSON.parse(notice({ type: 'transcript', role: 'user', text: 'hi', language: 'en-US', startMs: 1, endMs: 2, interrupted: false }))).toEqual({
      type: 'transcript',
      role: 'user',
      text: 'hi',
      language: 'en-US',
      start_ms: 1,
      end_ms: 2,
      interrupted: false,
    });
    expect(JSON.parse(notice({ type: 'call-end', reason: 'completed' }))).toEqual({ type: 'call-end', reason: 'completed' });
  });

  it('closes each refusal with its own code and a reason that fits a close frame', () => {
    expect(refusal('token_expired', 'the token’s window to connect passed')).toEqual({ code: REALTIME_CLOSE.tokenExpired, reason: 'token_expired: the token’s window to connect passed' });
    expect(refusal('token_used', 'x').code).toBe(REALTIME_CLOSE.tokenUsed);
    expect(refusal('token_forbidden', 'x').code).toBe(REALTIME_CLOSE.tokenForbidden);
    expect(refusal('call_over', 'x').code).toBe(REALTIME_CLOSE.callOver);
    expect(refusal('bad_request', 'x').code).toBe(REALTIME_CLOSE.badRequest);
    expect(refusal('refused', 'x').code).toBe(REALTIME_CLOSE.tokenInvalid);
    expect(Buffer.byteLength(refusal('token_invalid', 'é'.repeat(200)).reason)).toBeLessThanOrEqual(123);
  });

  it('reads an operator’s transfer, and throws on one without a destination', () => {
    const web = browserMediaProtocol('web');
    expect(web.parse(JSON.stringify({ type: 'transfer', destination: ' +15551230000 ' }))).toEqual({ type: 'transfer', destination: '+15551230000' });
    expect(() => web.parse(JSON.stringify({ type: 'transfer' }))).toThrow('transfer needs `destination`');
    expect(() => web.parse(JSON.stringify({ type: 'transfer', destination: ' ' }))).toThrow('transfer needs `destination`');
  });

  it('tells the browser of what could not be done', () => {
    const web = browserMediaProtocol('web');
    expect(JSON.parse(web.notice?.('s', { type: 'error', code: 'transfer_failed', message: 'no' }) ?? '')).toEqual({ type: 'error', code: 'transfer_failed', message: 'no' });
  });

  it('reads a rendezvous seat’s signal as it is, and throws on one that is not an object or is larger than 64 KiB', () => {
    const data = { sdp: { type: 'offer', sdp: 'v=0\r\n' } };
    expect(web.parse(JSON.stringify({ type: 'signal', data }))).toEqual({ type: 'signal', data });
    expect(() => web.parse(JSON.stringify({ type: 'signal', data: 'offer' }))).toThrow('signal needs `data`');
    expect(() => web.parse(JSON.stringify({ type: 'signal', data: [1] }))).toThrow('signal needs `data`');
    expect(() => web.parse(JSON.stringify({ type: 'signal', data: { sdp: 'x'.repeat(REALTIME_SIGNAL_MAX_BYTES) } }))).toThrow('larger than');
  });

  it('writes peer notices (offer only when this seat offers) and relayed signals', () => {
    expect(JSON.parse(notice({ type: 'peer', state: 'joined', seat: 'b', offer: true }))).toEqual({ type: 'peer', state: 'joined', seat: 'b', offer: true });
    expect(JSON.parse(notice({ type: 'peer', state: 'left', seat: 'b', offer: false }))).toEqual({ type: 'peer', state: 'left', seat: 'b' });
    expect(JSON.parse(notice({ type: 'signal', data: { candidate: null } }))).toEqual({ type: 'signal', data: { candidate: null } });
  });
});
