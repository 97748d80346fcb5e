import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { Observable } from 'rxjs';
import { runWithRequestId } from '@parley/observability';

/** Runs each HTTP handler inside the request's context so logs and gRPC hops carry its request id. */
@Injectable()
export class RequestContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    return new Observable((subscriber) => runWithRequestId(String(request.id), () => next.handle().subscribe(subscriber)));
  }
}
