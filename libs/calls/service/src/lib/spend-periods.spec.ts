import { periodEnd, periodStart, SPEND_AMOUNT } from './spend-periods';

describe('spending periods', () => {
  it('starts a day at UTC midnight and a month on its first, whatever the time of day', () => {
    const at = new Date('2026-11-28T23:59:59.999Z');
    expect(periodStart('day', at).toISOString()).toBe('2026-11-28T00:00:00.000Z');
    expect(periodStart('month', at).toISOString()).toBe('2026-11-01T00:00:00.000Z');
  });

  it('ends a period where the next starts, across a month and a year', () => {
    expect(periodEnd('day', new Date('2026-02-28T00:00:00Z')).toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(periodEnd('month', new Date('2026-12-01T00:00:00Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('takes amounts as exact decimals only', () => {
    expect(['10', '250.00', '0.0000000001'].every((a) => SPEND_AMOUNT.test(a))).toBe(true);
    expect(['', '-1', '1e3', '1.', '1.00000000001', ' 1'].some((a) => SPEND_AMOUNT.test(a))).toBe(false);
  });
});
