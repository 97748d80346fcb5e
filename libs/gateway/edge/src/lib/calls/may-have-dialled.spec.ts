import { AppError } from '@parley/rpc';
import { mayHaveDialled } from './may-have-dialled';

describe('mayHaveDialled: what a failed POST /v1/calls tells the client', () => {
  it('says the call may have been placed, and how to find it, when the calls service’s answer was lost', () => {
    const lost = mayHaveDialled(new AppError('service_unavailable', 'The calls service did not answer in time; retry shortly.'));
    expect(lost).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('may have been placed') });
    expect((lost as AppError).message).toContain('same Idempotency-Key');
  });

  it('passes on a refusal before dialling (it carries retry_after_seconds) and every other error as they are', () => {
    const refused = new AppError('service_unavailable', 'The calls service is temporarily unavailable; retry shortly.', undefined, { retry_after_seconds: 5 });
    const limit = new AppError('plan_limit_reached', 'ceiling');
    const other = new Error('boom');
    expect(mayHaveDialled(refused)).toBe(refused);
    expect(mayHaveDialled(limit)).toBe(limit);
    expect(mayHaveDialled(other)).toBe(other);
  });
});
