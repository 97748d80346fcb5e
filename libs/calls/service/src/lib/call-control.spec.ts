import { CarrierCallStatus } from '@parley/carrier-core';
import { CallStatus } from './call-state';
import { transitionForCarrierStatus } from './call-control';

const update = (status: CarrierCallStatus) => ({ carrierCallId: 'CA1', status, at: new Date() });
const call = (status: CallStatus, transferredTo: string | null = null, claimable = false) => ({ status, transferredTo, claimable });

describe('carrier status on the call state machine', () => {
  it('moves a queued call through ringing and answer', () => {
    expect(transitionForCarrierStatus(call('queued'), update('ringing'))).toEqual({ status: 'ringing' });
    expect(transitionForCarrierStatus(call('ringing'), update('in_progress'))).toEqual({ status: 'in_progress' });
    expect(transitionForCarrierStatus(call('queued'), update('in_progress'))).toEqual({ status: 'in_progress' });
  });

  it('ignores callbacks that arrive late or out of order', () => {
    expect(transitionForCarrierStatus(call('queued'), update('queued'))).toBeUndefined();
    expect(transitionForCarrierStatus(call('in_progress'), update('ringing'))).toBeUndefined();
    expect(transitionForCarrierStatus(call('in_progress'), update('in_progress'))).toBeUndefined();
    expect(transitionForCarrierStatus(call('ended'), update('completed'))).toBeUndefined();
    expect(transitionForCarrierStatus(call('failed'), update('in_progress'))).toBeUndefined();
  });

  it('ends an answered call completed, an unanswered one canceled, a transferred one transferred', () => {
    expect(transitionForCarrierStatus(call('in_progress'), update('completed'))).toEqual({ status: 'ended', endReason: 'completed' });
    expect(transitionForCarrierStatus(call('ringing'), update('completed'))).toEqual({ status: 'ended', endReason: 'canceled' });
    expect(transitionForCarrierStatus(call('in_progress', '+15550100000'), update('completed'))).toEqual({
      status: 'ended',
      endReason: 'transferred',
    });
  });

  it('keeps busy, no-answer and canceled as end reasons and fails the call when the carrier fails it', () => {
    expect(transitionForCarrierStatus(call('ringing'), update('busy'))).toEqual({ status: 'ended', endReason: 'busy' });
    expect(transitionForCarrierStatus(call('ringing'), update('no_answer'))).toEqual({ status: 'ended', endReason: 'no_answer' });
    expect(transitionForCarrierStatus(call('queued'), update('canceled'))).toEqual({ status: 'ended', endReason: 'canceled' });
    expect(transitionForCarrierStatus(call('queued'), update('failed'))).toMatchObject({ status: 'failed', endReason: 'carrier_error' });
  });

  it('leaves a claimable call ringing when the carrier answers its leg (its claim answers it), and ends it as any unanswered call', () => {
    expect(transitionForCarrierStatus(call('ringing', null, true), update('in_progress'))).toBeUndefined();
    expect(transitionForCarrierStatus(call('ringing', null, true), update('completed'))).toEqual({ status: 'ended', endReason: 'canceled' });
    expect(transitionForCarrierStatus(call('in_progress', null, true), update('completed'))).toEqual({ status: 'ended', endReason: 'completed' });
  });
});
