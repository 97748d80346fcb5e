import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppError } from '@parley/rpc';
import { Operation } from './operation';
import { QueryGuard } from './query.guard';

class Routes {
  @Operation({ summary: 'A list', permission: 'public', list: true })
  list(): void {
    return undefined;
  }

  @Operation({ summary: 'A filtered list', permission: 'public', list: true, query: ['status'] })
  filtered(): void {
    return undefined;
  }

  @Operation({ summary: 'One thing', permission: 'public' })
  retrieve(): void {
    return undefined;
  }
}

function context(handler: () => void, query: Record<string, unknown> | undefined): ExecutionContext {
  return {
    getHandler: () => handler,
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => ({ query }) }),
  } as unknown as ExecutionContext;
}

function refusal(handler: () => void, query: Record<string, unknown>): AppError {
  try {
    guard.canActivate(context(handler, query));
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected the query to be refused');
}

const guard = new QueryGuard(new Reflector());

describe('QueryGuard (list query parameters)', () => {
  it('lets a list route take limit and starting_after', () => {
    expect(guard.canActivate(context(Routes.prototype.list, { limit: '10', starting_after: 'abc.def' }))).toBe(true);
    expect(guard.canActivate(context(Routes.prototype.list, {}))).toBe(true);
    expect(guard.canActivate(context(Routes.prototype.list, undefined))).toBe(true);
  });

  it('refuses an unknown parameter with invalid_request naming it', () => {
    const error = refusal(Routes.prototype.list, { limit: '10', colour: 'red' });

    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    expect(error.message).toBe('Unknown query parameter: colour.');
  });

  it('names every unknown parameter', () => {
    expect(refusal(Routes.prototype.list, { colour: 'red', size: 'xl' }).message).toBe('Unknown query parameters: colour, size.');
  });

  it('refuses a repeated parameter with invalid_request naming it', () => {
    const error = refusal(Routes.prototype.list, { limit: ['10', '20'] });

    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('limit');
  });

  it('accepts the extra filters a route declares, and only on that route', () => {
    expect(guard.canActivate(context(Routes.prototype.filtered, { status: 'active', limit: '5' }))).toBe(true);
    expect(refusal(Routes.prototype.list, { status: 'active' }).code).toBe('invalid_request');
  });

  it('refuses list parameters on a route that is not a list', () => {
    expect(refusal(Routes.prototype.retrieve, { limit: '5' }).message).toBe('Unknown query parameter: limit.');
  });
});
