import { createHash } from 'node:crypto';
import { CallHandler, ExecutionContext, HttpStatus, Injectable, NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { catchError, from, mergeMap, Observable, throwError } from 'rxjs';
import { AppError } from '@parley/rpc';
import { toProblem } from '../http/problem';
import { IdempotencyStore } from './idempotency.store';
import { ReplayedResponse } from './replayed-response';


const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** JSON with sorted keys, so the same body written in another key order is still the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `Idempotency-Key` on the POST routes with side effects (applied by `@Operation({ idempotent: true })`), per account, for 24 hours: the first request runs; the
 * same key and body again replays its status and body (header `Idempotency-Replayed: true`); the same key with
 * another body, or while the first still runs, is refused with 409 `idempotency_conflict`. Server-side failures
 * (5xx) are not stored, so a retry runs again.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly store: IdempotencyStore,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const key = request.headers['idempotency-key'];
    if (key === undefined || !request.principal) return next.handle();
    if (typeof key !== 'string' || !KEY_SHAPE.test(key)) {
      return throwError(() => new AppError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters.'));
    }
    const accountId = request.principal.accountId;
    const hash = createHash('sha256').update(`${request.method} ${request.url}\n${canonical(request.body ?? null)}`).digest('hex');
    const status = this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler()) ?? HttpStatus.CREATED;

    return from(this.store.begin(accountId, key, hash)).pipe(
      mergeMap((outcome) => {
        switch (outcome.kind) {
          case 'replay':
            return throwError(() => new ReplayedResponse(outcome.status, outcome.body));
          case 'mismatch':
            return throwError(
              () => new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.'),
            );
          case 'running':
            return throwError(
              () => new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still running; retry shortly.'),
            );
          case 'owner':
            return next.handle().pipe(
              mergeMap(async (body) => {
                await this.store.complete(accountId, key, status, body);
                return body;
              }),
              catchError((error: unknown) =>
                from(this.settleFailure(accountId, key, error, String(request.id))).pipe(mergeMap(() => throwError(() => error))),
              ),
            );
        }
      }),
    );
  }

  private async settleFailure(accountId: string, key: string, error: unknown, requestId: string): Promise<void> {
    const problem = toProblem(error, requestId);
    if (problem.status >= 500) await this.store.release(accountId, key);
    else await this.store.complete(accountId, key, problem.status, problem);
  }
}
