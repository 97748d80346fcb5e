import { failureStreaks } from './failure-streaks';

const attempt = (endpointId: string, delivered: boolean, test = false, aborted = false) => ({
  endpointId,
  delivered,
  test,
  aborted,
  result: `${endpointId}:${delivered}`,
});

describe('failure counting rule of automatic disabling', () => {
  it('counts every failed attempt per endpoint and keeps the last for the reason', () => {
    expect(failureStreaks([attempt('a', false), attempt('b', false), attempt('a', false)])).toEqual(
      new Map([
        ['a', { reset: false, failures: 2, last: 'a:false' }],
        ['b', { reset: false, failures: 1, last: 'b:false' }],
      ]),
    );
  });

  it('resets on a success, counting only the failures after it', () => {
    expect(failureStreaks([attempt('a', false), attempt('a', true), attempt('a', false)]).get('a')).toMatchObject({ reset: true, failures: 1 });
  });

  it('ignores test deliveries: twenty failed tests add nothing, a successful one resets nothing', () => {
    const tests = Array.from({ length: 20 }, () => attempt('a', false, true));
    expect(failureStreaks(tests).size).toBe(0);
    expect(failureStreaks([attempt('a', false), attempt('a', true, true), ...tests]).get('a')).toEqual({ reset: false, failures: 1, last: 'a:false' });
  });

  it('ignores attempts abandoned because the endpoint was disabled: they neither count nor reset', () => {
    const abandoned = Array.from({ length: 20 }, () => attempt('a', false, false, true));
    expect(failureStreaks([attempt('a', false), ...abandoned]).get('a')).toEqual({ reset: false, failures: 1, last: 'a:false' });
  });
});
