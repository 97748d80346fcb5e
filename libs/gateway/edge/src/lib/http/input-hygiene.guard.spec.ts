import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { newId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { InputHygieneGuard } from './input-hygiene.guard';
import { ResourceId } from './resource-id';

class Undeclared {}
@ResourceId('agt', 'agent')
class Agents {}

function context(request: { params?: unknown; query?: unknown; body?: unknown }, controller: object = Undeclared): ExecutionContext {
  return { switchToHttp: () => ({ getRequest: () => request }), getClass: () => controller } as unknown as ExecutionContext;
}

function refusal(request: { params?: unknown; query?: unknown; body?: unknown }, controller?: object): string | undefined {
  try {
    new InputHygieneGuard(new Reflector()).canActivate(context(request, controller));
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

  it('refuses a path id its resource could not have given as not_found, naming the resource', () => {
    expect(refusal({ params: { id: newId('agt') } }, Agents)).toBeUndefined();
    for (const id of ['agt_1', newId('call'), `${newId('agt')}x`, 'agt_!!!!!!!!!!!!!!!!!!!!!!']) expect(refusal({ params: { id } }, Agents)).toBe('not_found');
    try {
      new InputHygieneGuard(new Reflector()).canActivate(context({ params: { id: 'agt_1' } }, Agents));
    } catch (error) {
      expect((error as AppError).message).toBe('No such agent.');
    }
  });
});
