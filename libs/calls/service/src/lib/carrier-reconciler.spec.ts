import { CarrierError } from '@parley/carrier-core';
import { reconcileStep } from './carrier-reconciler';

const failure = (code: CarrierError['code']) => ({ error: new CarrierError(`twilio: ${code}`, { code, carrier: 'twilio' }) });

describe('reconcileStep (what one carrier look-up leads to)', () => {
  it('applies the status the carrier reports', () => {
    const update = { carrierCallId: 'CA1', status: 'no_answer' as const, at: new Date() };
    expect(reconcileStep({ update })).toEqual({ apply: update, stopPass: false });
  });

  it('leaves a call whose look-up failed for a later pass', () => {
    for (const code of ['unavailable', 'not_found', 'unknown'] as const) expect(reconcileStep(failure(code))).toEqual({ stopPass: false });
    expect(reconcileStep({ error: new Error('socket hang up') })).toEqual({ stopPass: false });
  });

  it('ends the pass when the carrier will refuse the next look-ups too (rate limit, credentials)', () => {
    expect(reconcileStep(failure('rate_limited'))).toEqual({ stopPass: true });
    expect(reconcileStep(failure('unauthorized'))).toEqual({ stopPass: true });
  });
});
