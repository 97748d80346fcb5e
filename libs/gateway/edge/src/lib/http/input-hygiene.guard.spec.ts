import { ExecutionContext } from '@nestjs/common';
import { AppError } from '@parley/rpc';
import { InputHygieneGuard } from './input-hygiene.guard';

function context(request: { params?: unknown; query?: unknown; body?: unknown }): ExecutionContext {
  return { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
}

function refusal(request: { params?: unknown; query?: unknown; body?: unknown }): string | undefined {
  try {
    new InputHygieneGuard().canActivate(context(request));
    return undefined;
  } catch (error) {
    return (error as AppError).code;
  }
}

describe('InputHygieneGuard', () => {
  it('lets a request with clean path, query and body through', () => {
    expect(refusal({ params: { id: 'agt_1' }, query: { limit: '5' }, body: { name: 'Desk' } })).toBeUndefined();
    expect(refusal({})).toBeUndefined();
  });

  it('refuses unstorable text in the path as not_found, in the query as invalid_request, in the body as validation_error', () => {
    expect(refusal({ params: { id: '\u0000' }, query: { limit: '\u0000' }, body: { name: '\u0000' } })).toBe('not_found');
    expect(refusal({ query: { limit: '\u0000' }, body: { name: '\u0000' } })).toBe('invalid_request');
    expect(refusal({ body: { name: '\u0000' } })).toBe('validation_error');
  });
});
