import { AppError } from '@parley/rpc';
import { callListFilter } from './calls.controller';

const code = (value: string) => {
  try {
    callListFilter({ created_after: value }, 'created_after');
    return undefined;
  } catch (error) {
    return (error as AppError).code;
  }
};

describe('the calls list time filters', () => {
  it.each(['2026-11-24T20:00:00Z', '2026-11-24T20:00:00.123+01:00', '0001-01-01T00:00:00Z'])('take the RFC 3339 time %s', (value) => {
    expect(code(value)).toBeUndefined();
  });

  it.each(['-004713-11-23T23:59:59.999Z', '+275760-09-13T00:00:00Z', '2026-11-24', 'March 7', '1', '2026-02-30T00:00:00Z x'])(
    'refuse %s with 400 invalid_request before any query (PostgreSQL holds no year outside 4713 BC to 294276)',
    (value) => {
      expect(code(value)).toBe('invalid_request');
    },
  );
});
