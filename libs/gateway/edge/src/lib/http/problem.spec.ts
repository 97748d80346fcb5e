import {
  BadGatewayException,
  BadRequestException,
  ForbiddenException,
  HttpException,
  ImATeapotException,
  MethodNotAllowedException,
  NotFoundException,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { PROBLEM_TYPE_BASE } from '@parley/contracts';
import { httpProblems } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { sendProblem, toProblem } from './problem';

// The logger is replaced so unhandled errors can be seen being logged (and do not print during the tests).
jest.mock('@parley/observability', () => {
  const log = { error: jest.fn(), warn: jest.fn(), info: jest.fn(), debug: jest.fn(), trace: jest.fn(), fatal: jest.fn() };
  return { ...jest.requireActual('@parley/observability'), serviceLogger: () => log };
});

const log = (jest.requireMock('@parley/observability') as { serviceLogger: () => { error: jest.Mock } }).serviceLogger();

beforeEach(() => log.error.mockClear());

describe('toProblem', () => {
  it('keeps an AppError’s code, status, message and field errors', () => {
    const errors = [
      { field: 'name', message: 'must be a string' },
      { field: 'languages[0].code', message: 'must be longer than or equal to 1 characters' },
    ];

    expect(toProblem(AppError.validation(errors), 'req_123')).toEqual({
      type: `${PROBLEM_TYPE_BASE}/validation_error`,
      title: 'Validation failed',
      status: 422,
      detail: 'The request body has invalid fields.',
      code: 'validation_error',
      request_id: 'req_123',
      errors,
    });
  });

  it('leaves errors out when there are none', () => {
    expect(toProblem(AppError.notFound('agent'), 'req_1')).not.toHaveProperty('errors');
  });

  it('adds an AppError’s extra members', () => {
    const problem = toProblem(new AppError('rate_limited', 'Slow down.', undefined, { retry_after_seconds: 7 }), 'req_1');

    expect(problem).toMatchObject({ code: 'rate_limited', status: 429, retry_after_seconds: 7 });
  });

  it.each([
    ['404', new NotFoundException('Cannot GET /v1/nope'), 'not_found', 404, 'Not found'],
    ['405', new MethodNotAllowedException(), 'not_found', 404, 'Not found'],
    ['413', new PayloadTooLargeException(), 'payload_too_large', 413, 'Payload too large'],
    ['415', new UnsupportedMediaTypeException(), 'unsupported_media_type', 415, 'Unsupported media type'],
    ['400', new BadRequestException('Bad thing'), 'invalid_request', 400, 'Invalid request'],
    ['403', new ForbiddenException(), 'permission_denied', 403, 'Permission denied'],
    ['another 4xx', new ImATeapotException(), 'invalid_request', 400, 'Invalid request'],
    ['another 5xx', new BadGatewayException(), 'internal_error', 500, 'Internal error'],
  ])('maps an HttpException %s to a stable code', (_what, exception, code, status, title) => {
    const problem = toProblem(exception, 'req_1');

    expect(problem).toMatchObject({ code, status, title, type: `${PROBLEM_TYPE_BASE}/${code}`, request_id: 'req_1' });
  });

  it('does not echo the framework’s route message on 404', () => {
    expect(toProblem(new NotFoundException('Cannot GET /v1/secret-route'), 'req_1').detail).toBe('No such route.');
  });

  it('keeps the message of other HttpExceptions', () => {
    expect(toProblem(new BadRequestException('Bad thing'), 'req_1').detail).toBe('Bad thing');
    expect(toProblem(new HttpException('Custom', 409), 'req_1')).toMatchObject({ code: 'conflict', detail: 'Custom' });
  });

  it('turns an unknown error into a generic 500 internal_error and logs it', () => {
    const error = new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');

    const problem = toProblem(error, 'req_42');

    expect(problem).toEqual({
      type: `${PROBLEM_TYPE_BASE}/internal_error`,
      title: 'Internal error',
      status: 500,
      detail: 'Internal error.',
      code: 'internal_error',
      request_id: 'req_42',
    });
    expect(JSON.stringify(problem)).not.toContain('hunter2');
    expect(log.error).toHaveBeenCalledWith({ err: error }, 'unhandled error');
  });

  it('answers 503 service_unavailable with retry_after_seconds when the gateway’s own database is unreachable', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2'), { code: 'ECONNREFUSED' });

    const problem = toProblem(error, 'req_43');

    expect(problem).toMatchObject({ code: 'service_unavailable', status: 503, retry_after_seconds: expect.any(Number) });
    expect(JSON.stringify(problem)).not.toContain('hunter2');
  });

  it('turns thrown non-errors into internal_error', () => {
    expect(toProblem('a string', 'req_1')).toMatchObject({ code: 'internal_error', status: 500, detail: 'Internal error.' });
    expect(toProblem(undefined, 'req_1')).toMatchObject({ code: 'internal_error', status: 500 });
    expect(toProblem(null, 'req_1')).toMatchObject({ code: 'internal_error', status: 500 });
  });

  it.each([
    [{ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }, 'payload_too_large', 413],
    [{ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }, 'unsupported_media_type', 415],
    [{ code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 }, 'invalid_request', 400],
    [{ code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH', statusCode: 400 }, 'invalid_request', 400],
    [{ code: 'FST_ERR_BAD_URL', statusCode: 400 }, 'invalid_request', 400],
    [{ code: 'FST_ERR_MAX_PARAM_LENGTH', statusCode: 414 }, 'uri_too_long', 414],
    [Object.assign(new SyntaxError('Unexpected token } in JSON at position 9'), { statusCode: 400 }), 'invalid_request', 400],
  ])('maps a Fastify request error %p without logging it', (error, code, status) => {
    expect(toProblem(error, 'req_1')).toMatchObject({ code, status });
    expect(log.error).not.toHaveBeenCalled();
  });

  it('links every problem type to its code’s page and fills the request id', () => {
    for (const error of [AppError.notFound(), new NotFoundException(), new Error('x')]) {
      const problem = toProblem(error, 'req_abc');
      expect(problem.type).toBe(`${PROBLEM_TYPE_BASE}/${problem.code}`);
      expect(problem.request_id).toBe('req_abc');
    }
  });
});

describe('sendProblem', () => {
  it('counts each problem by route template, status and code', async () => {
    const reply = { status: jest.fn(), header: jest.fn(), send: jest.fn() };
    reply.status.mockReturnValue(reply);
    reply.header.mockReturnValue(reply);
    const request = { id: 'req_1', routeOptions: { url: '/v1/calls/:id' } };
    const count = async () =>
      (await httpProblems.get()).values.find((v) => v.labels.route === '/v1/calls/:id' && v.labels.code === 'not_found' && v.labels.status === '404')?.value ?? 0;
    const before = await count();

    sendProblem(reply as never, request as never, new NotFoundException());

    expect(reply.status).toHaveBeenCalledWith(404);
    expect(await count()).toBe(before + 1);
  });
});
