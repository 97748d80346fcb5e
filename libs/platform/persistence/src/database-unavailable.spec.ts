import { QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from './database-unavailable';

const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a reset connection', withCode('ECONNRESET', 'read ECONNRESET')],
    ['the server shutting down (57P01 admin_shutdown)', withCode('57P01', 'terminating connection due to administrator command')],
    ['the server starting up (57P03 cannot_connect_now)', withCode('57P03', 'the database system is starting up')],
    ['a connection exception (class 08)', withCode('08006', 'connection failure')],
    ['a connection that ended under a query', new Error('Connection terminated unexpectedly')],
    ['the pool giving up waiting', new Error('timeout exceeded when trying to connect')],
  ])('recognises %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('looks through TypeORM, causes and a refused dual-stack connect', () => {
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], withCode('57P01')))).toBe(true);
    expect(isDatabaseUnavailable(new Error('query failed', { cause: withCode('ECONNREFUSED') }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isDatabaseUnavailable(new AggregateError([withCode('ECONNREFUSED')]))).toBe(true);
  });

  it('leaves faults of the request or the code alone', () => {
    expect(isDatabaseUnavailable(new QueryFailedError('INSERT', [], withCode('23505', 'duplicate key value violates unique constraint')))).toBe(false);
    expect(isDatabaseUnavailable(withCode('42P01', 'relation "calls" does not exist'))).toBe(false);
    expect(isDatabaseUnavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
    expect(isDatabaseUnavailable('ECONNREFUSED')).toBe(false);
  });
});
