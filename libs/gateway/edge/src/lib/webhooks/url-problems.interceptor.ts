import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { catchError, from, mergeMap, Observable, throwError } from 'rxjs';
import { AppError } from '@parley/rpc';
import { WebhooksClient } from './webhooks.client';

/**
 * Every invalid field of an endpoint body at once. Its shape is checked here (BodyValidationPipe) and its URL by the
 * webhook service (it owns the egress rules and resolves names), so when the shape check refuses a body whose `url`
 * it found no fault with, the service checks that URL too and its problem joins the others in one 422.
 */
@Injectable()
export class WebhookUrlProblemsInterceptor implements NestInterceptor {
  constructor(private readonly webhooks: WebhooksClient) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const body = context.switchToHttp().getRequest<FastifyRequest>().body as { url?: unknown } | null | undefined;
    return next.handle().pipe(catchError((error: unknown) => from(this.withUrlProblem(error, body?.url)).pipe(mergeMap((e) => throwError(() => e)))));
  }

  private async withUrlProblem(error: unknown, url: unknown): Promise<unknown> {
    if (!(error instanceof AppError) || error.code !== 'validation_error' || typeof url !== 'string' || url === '') return error;
    if (error.errors?.some((p) => p.field === 'url')) return error;
    const { problem } = await this.webhooks.call('checkEndpointUrl', (s, md) => s.checkEndpointUrl({ url }, md));
    return problem ? AppError.validation([...(error.errors ?? []), { field: 'url', message: problem }]) : error;
  }
}
