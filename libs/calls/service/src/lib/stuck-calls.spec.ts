import { ReapableCall, stuckCallTransition } from './stuck-calls';

const NOW = new Date('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const limits = { stuckSeconds: 120, mediaLostSeconds: 30 };
const call = (over: Partial<ReapableCall>): ReapableCall => ({ status: 'in_progress', direction: 'outbound', updatedAt: ago(5), lastMediaAt: ago(5), transferredTo: null, ...over });

describe('stuckCallTransition (the reaper’s decision)', () => {
  it('fails an answered call whose media heartbeats stopped for longer than MEDIA_LOST_SECONDS as media_lost', () => {
    expect(stuckCallTransition(call({ updatedAt: ago(40), lastMediaAt: ago(31) }), NOW, limits)).toMatchObject({
      status: 'failed',
      endReason: 'media_lost',
      failureReason: expect.stringContaining('no heartbeat from the media worker for 30 s'),
    });
  });

  it('leaves an answered call whose media beats, however long ago its state changed', () => {
    expect(stuckCallTransition(call({ updatedAt: ago(3600), lastMediaAt: ago(10) }), NOW, limits)).toBeUndefined();
    expect(stuckCallTransition(call({ lastMediaAt: ago(30) }), NOW, limits)).toBeUndefined();
  });

  it('fails a call with neither progress nor media for CALL_STUCK_SECONDS as no_media', () => {
    expect(stuckCallTransition(call({ status: 'ringing', updatedAt: ago(121), lastMediaAt: null }), NOW, limits)).toMatchObject({
      status: 'failed',
      endReason: 'no_media',
    });
    expect(stuckCallTransition(call({ status: 'in_progress', updatedAt: ago(121), lastMediaAt: null }), NOW, limits)).toMatchObject({ endReason: 'no_media' });
    expect(stuckCallTransition(call({ status: 'queued', updatedAt: ago(119), lastMediaAt: null }), NOW, limits)).toBeUndefined();
  });

  it('ends a web call no browser joined within CALL_STUCK_SECONDS as canceled, not as a failure', () => {
    expect(stuckCallTransition(call({ direction: 'web', status: 'queued', updatedAt: ago(121), lastMediaAt: null }), NOW, limits)).toEqual({ status: 'ended', endReason: 'canceled' });
    expect(stuckCallTransition(call({ direction: 'web', status: 'queued', updatedAt: ago(119), lastMediaAt: null }), NOW, limits)).toBeUndefined();
    // Joined, then silent: a lost stream like any other.
    expect(stuckCallTransition(call({ direction: 'web', updatedAt: ago(40), lastMediaAt: ago(31) }), NOW, limits)).toMatchObject({ endReason: 'media_lost' });
  });

  it('never reaps a transferred call or one that is over', () => {
    expect(stuckCallTransition(call({ transferredTo: '+15550100000', updatedAt: ago(9999), lastMediaAt: ago(9999) }), NOW, limits)).toBeUndefined();
    expect(stuckCallTransition(call({ status: 'ended', updatedAt: ago(9999), lastMediaAt: ago(9999) }), NOW, limits)).toBeUndefined();
    expect(stuckCallTransition(call({ status: 'failed', updatedAt: ago(9999), lastMediaAt: null }), NOW, limits)).toBeUndefined();
  });

  it('measures ages against the time it is given (the database’s clock), not the machine’s', () => {
    const dbNow = new Date(Date.now() + 3_600_000); // this machine's clock an hour behind the database's
    const heartbeat = new Date(dbNow.getTime() - 60_000);
    expect(stuckCallTransition(call({ updatedAt: heartbeat, lastMediaAt: heartbeat }), dbNow, limits)).toMatchObject({ endReason: 'media_lost' });
  });
});
