import { createHash } from 'node:crypto';
import { CallHandler, ExecutionContext, HttpStatus, Injectable, NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { catchError, finalize, from, mergeMap, Observable, throwError } from 'rxjs';
import { serviceLogger } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { asAppError } from '../http/problem';
import { IdempotencyStore } from './idempotency.store';
import { ReplayedResponse } from './replayed-response';


const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** Route metadata: the handler hands the key to the owning service, which keeps the outcome per key itself. */
export const IDEMPOTENCY_FORWARDED = 'parley:idempotency-forwarded';

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
 * `Idempotency-Key` on the POST routes with side effects (applied by `@Operation({ idempotent })`), per account, for 24
 * hours. The first request runs, holding the key while it runs however long that takes; the same key and body again
 * replays its status and body (header `Idempotency-Replayed: true`); the same key with another body, or while the
 * first still runs, is refused with 409 `idempotency_conflict`.
 *
 * Only a success is stored. A refusal (4xx) changed nothing, so the same request with its key runs afresh (a 402
 * may succeed once a call ends); another request with the key is still refused. A server-side failure (5xx: a deadline, a lost peer) may have taken effect, so the key is
 * never run again: a retry is told the first request was interrupted (409), unless the route forwards the key to
 * the owning service, which then answers the retry with what the first run made. A success that cannot be stored
 * is still answered; its key stays held, as if the request were still running.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly log = serviceLogger('gateway');

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
    const forwarded = this.reflector.get<boolean | undefined>(IDEMPOTENCY_FORWARDED, context.getHandler()) === true;

    return from(this.store.begin(accountId, key, hash, forwarded)).pipe(
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
          case 'interrupted':
            return throwError(
              () =>
                new AppError(
                  'idempotency_conflict',
                  'The first request with this Idempotency-Key was interrupted without an answer: it may have taken effect, and it is ' +
                    'never run again. Check whether it did before sending it again with a new key.',
                ),
            );
          case 'owner': {
            const stopHolding = this.store.hold(accountId, key);
            return next.handle().pipe(
              mergeMap(async (body) => {
                stopHolding();
                await this.settle(accountId, key, () => this.store.complete(accountId, key, status, body));
                return body;
              }),
              catchError((error: unknown) => {
                stopHolding();
                return from(this.settle(accountId, key, () => this.settleFailure(accountId, key, error, forwarded))).pipe(
                  mergeMap(() => throwError(() => error)),
                );
              }),
              finalize(stopHolding),
            );
          }
        }
      }),
    );
  }

  /** A record that cannot be written leaves the key held (running, then interrupted): never released by accident. */
  private async settle(accountId: string, key: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      this.log.error({ err, accountId }, 'idempotency record not settled; the key stays held');
    }
  }

  private async settleFailure(accountId: string, key: string, error: unknown, forwarded: boolean): Promise<void> {
    if (asAppError(error).status < 500 || forwarded) await this.store.reopen(accountId, key);
    else await this.store.interrupt(accountId, key);
  }
}
