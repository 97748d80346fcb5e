import { status as GrpcStatus } from '@grpc/grpc-js';
import { PROBLEMS, ProblemCode } from '@parley/contracts';
import { AppError, DATABASE_RETRY_AFTER_SECONDS, fromGrpcError, grpcStatusName, toGrpcError } from './app-error';

/** What a client sees after the server failed with `error`: the status and details, as grpc-js hands them over. */
function acrossTheWire(error: unknown, target = 'agents'): AppError {
  const { code, details } = toGrpcError(error);
  return fromGrpcError(Object.assign(new Error(`${code} ${GrpcStatus[code]}: ${details}`), { code, details }), target);
}

describe('AppError', () => {
  it('takes its HTTP status from the problem catalogue', () => {
    expect(new AppError('not_found', 'x').status).toBe(404);
    expect(AppError.validation([]).status).toBe(422);
    expect(new AppError('service_unavailable', 'x').status).toBe(503);
  });

  it('builds not_found and validation errors', () => {
    expect(AppError.notFound('agent')).toMatchObject({ code: 'not_found', message: 'No such agent.' });
    const errors = [{ field: 'name', message: 'is required' }];
    expect(AppError.validation(errors)).toMatchObject({ code: 'validation_error', errors });
  });
});

describe('AppError.from', () => {
  it('answers 503 service_unavailable with Retry-After advice when the database is unreachable', () => {
    for (const error of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
    ]) {
      expect(AppError.from(error)).toMatchObject({ code: 'service_unavailable', status: 503, extra: { retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS } });
    }
  });

  it('keeps an AppError and hides anything else as internal_error', () => {
    const conflict = new AppError('conflict', 'no');
    expect(AppError.from(conflict)).toBe(conflict);
    expect(AppError.from(new TypeError('x is undefined'))).toMatchObject({ code: 'internal_error', message: 'Internal error.' });
  });
});

describe('toGrpcError / fromGrpcError', () => {
  it('carries a database outage across a hop as service_unavailable with its retry advice', () => {
    const outage = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    expect(toGrpcError(outage).code).toBe(GrpcStatus.UNAVAILABLE);
    expect(acrossTheWire(outage, 'calls')).toMatchObject({
      code: 'service_unavailable',
      message: 'The database is unreachable; retry shortly.',
      extra: { retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS },
    });
  });

  it('keeps the code, message and field errors across a hop', () => {
    const errors = [
      { field: 'name', message: 'must be 1-200 characters' },
      { field: 'languages[0].code', message: 'must be a string' },
    ];

    const received = acrossTheWire(new AppError('validation_error', 'The request body has invalid fields.', errors));

    expect(received).toBeInstanceOf(AppError);
    expect(received.code).toBe('validation_error');
    expect(received.message).toBe('The request body has invalid fields.');
    expect(received.errors).toEqual(errors);
    expect(received.status).toBe(422);
  });

  it('keeps extra problem members across a hop', () => {
    const received = acrossTheWire(new AppError('rate_limited', 'Slow down.', undefined, { retry_after_seconds: 3 }));

    expect(received.code).toBe('rate_limited');
    expect(received.extra).toEqual({ retry_after_seconds: 3 });
  });

  it.each((Object.keys(PROBLEMS) as ProblemCode[]).filter((c) => c !== 'service_unavailable'))(
    'round-trips the code %s with its message',
    (code) => {
      expect(acrossTheWire(new AppError(code, `message of ${code}`))).toMatchObject({ code, message: `message of ${code}` });
    },
  );

  it('keeps service_unavailable raised by a service, reported as that peer being unavailable', () => {
    // UNAVAILABLE on the wire reads as a transport failure, so the client names the peer it called.
    expect(acrossTheWire(new AppError('service_unavailable', 'The calls service is down.'), 'agents')).toMatchObject({
      code: 'service_unavailable',
      message: 'The agents service is temporarily unavailable; retry shortly.',
    });
  });

  it('maps codes to the matching gRPC status', () => {
    expect(toGrpcError(AppError.notFound()).code).toBe(GrpcStatus.NOT_FOUND);
    expect(toGrpcError(AppError.validation([])).code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(toGrpcError(new AppError('unauthenticated', 'x')).code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(toGrpcError(new AppError('permission_denied', 'x')).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(toGrpcError(new AppError('internal_error', 'x')).code).toBe(GrpcStatus.INTERNAL);
  });

  it('turns any other error into internal_error without leaking its message', () => {
    const secret = 'password authentication failed for user "parley" at 10.0.0.7';

    const { code, details } = toGrpcError(new Error(secret));

    expect(code).toBe(GrpcStatus.INTERNAL);
    expect(details).not.toContain('password');
    expect(details).not.toContain('10.0.0.7');
    const received = acrossTheWire(new Error(secret));
    expect(received).toMatchObject({ code: 'internal_error', message: 'Internal error.' });
    expect(received.errors).toBeUndefined();
  });

  it('turns a thrown non-error into internal_error', () => {
    expect(acrossTheWire('just a string')).toMatchObject({ code: 'internal_error', message: 'Internal error.' });
    expect(acrossTheWire(undefined)).toMatchObject({ code: 'internal_error', message: 'Internal error.' });
  });

  it.each([
    ['UNAVAILABLE', GrpcStatus.UNAVAILABLE],
    ['DEADLINE_EXCEEDED', GrpcStatus.DEADLINE_EXCEEDED],
    ['CANCELLED', GrpcStatus.CANCELLED],
  ])('turns a transport failure (%s) into service_unavailable naming the peer', (_name, code) => {
    const error = Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code, details: 'No connection established' });

    const received = fromGrpcError(error, 'agents');

    expect(received.code).toBe('service_unavailable');
    expect(received.status).toBe(503);
    expect(received.message).toBe('The agents service is temporarily unavailable; retry shortly.');
  });

  it.each([
    ['details that are not JSON', { code: GrpcStatus.INTERNAL, details: 'boom' }],
    ['an unknown code', { code: GrpcStatus.INTERNAL, details: JSON.stringify({ code: 'teapot', message: 'short and stout' }) }],
    ['a code that is not a string', { code: GrpcStatus.INTERNAL, details: JSON.stringify({ code: 404, message: 'x' }) }],
    ['JSON null', { code: GrpcStatus.UNKNOWN, details: 'null' }],
    ['no details', { code: GrpcStatus.UNKNOWN }],
    ['an inherited property name as code', { code: GrpcStatus.INTERNAL, details: JSON.stringify({ code: 'toString', message: 'x' }) }],
    ['not an object', 'boom'],
    ['nothing', undefined],
  ])('turns %s into internal_error', (_what, error) => {
    expect(fromGrpcError(error, 'agents')).toMatchObject({ code: 'internal_error', message: 'Internal error.' });
  });
});

describe('grpcStatusName', () => {
  it('names known statuses and calls the rest UNKNOWN', () => {
    expect(grpcStatusName(GrpcStatus.OK)).toBe('OK');
    expect(grpcStatusName(GrpcStatus.UNAVAILABLE)).toBe('UNAVAILABLE');
    expect(grpcStatusName(undefined)).toBe('UNKNOWN');
    expect(grpcStatusName(999)).toBe('UNKNOWN');
  });
});
