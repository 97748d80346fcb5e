import { canMove, isLive, reasonForEnd } from './call-state';

describe('call state machine', () => {
  it.each([
    ['queued', 'ringing'],
    ['queued', 'in_progress'],
    ['ringing', 'in_progress'],
    ['ringing', 'ended'],
    ['in_progress', 'ended'],
    ['in_progress', 'failed'],
    ['queued', 'failed'],
  ] as const)('allows %s → %s', (from, to) => expect(canMove(from, to)).toBe(true));

  it.each([
    ['ended', 'ended'],
    ['ended', 'in_progress'],
    ['failed', 'ended'],
    ['in_progress', 'ringing'],
    ['in_progress', 'queued'],
    ['ringing', 'queued'],
  ] as const)('refuses %s → %s', (from, to) => expect(canMove(from, to)).toBe(false));

  it('treats ended and failed as final', () => {
    expect(isLive('ended')).toBe(false);
    expect(isLive('failed')).toBe(false);
    expect(isLive('ringing')).toBe(true);
  });

  it('records an API end before answer as canceled, after as hangup', () => {
    expect(reasonForEnd('queued')).toBe('canceled');
    expect(reasonForEnd('ringing')).toBe('canceled');
    expect(reasonForEnd('in_progress')).toBe('hangup');
  });
});
