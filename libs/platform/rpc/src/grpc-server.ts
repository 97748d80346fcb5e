import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { CallHandler, Controller, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { GrpcMethod, GrpcOptions, RpcException, Transport } from '@nestjs/microservices';
import { catchError, Observable, tap, throwError } from 'rxjs';
import { GrpcContract, healthV1, HEALTH_V1, PROTO_ROOT, REQUEST_ID_METADATA } from '@parley/contracts';
import { acceptRequestId, currentRequestId, HealthRegistry, newRequestId, rpcServerDuration, runWithRequestId, serviceLogger } from '@parley/observability';
import { AppError, grpcStatusName, toGrpcError } from './app-error';

export const PROTO_LOADER_OPTIONS = {
  // Field names stay as written in the .proto (snake_case), matching the generated types and the public JSON.
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

/**
 * gRPC server options for a service: its versioned contracts plus the standard grpc.health.v1 service.
 * `maxReceiveMessageBytes` raises gRPC's 4 MiB default for services taking large requests (document uploads).
 */
export function grpcServerOptions(contracts: GrpcContract[], url: string, maxReceiveMessageBytes?: number): GrpcOptions {
  const all = [HEALTH_V1, ...contracts];
  return {
    transport: Transport.GRPC,
    options: {
      url,
      package: all.map((c) => c.package),
      protoPath: all.map((c) => join(PROTO_ROOT, c.protoFile)),
      loader: PROTO_LOADER_OPTIONS,
      ...(maxReceiveMessageBytes ? { maxReceiveMessageLength: maxReceiveMessageBytes } : {}),
    },
  };
}

const { HealthCheckResponse_ServingStatus: Status } = healthV1;

/** grpc.health.v1 Check: SERVING while the service's dependencies answer and it is not shutting down. */
@Controller()
export class GrpcHealthController {
  private stopping = false;

  constructor(private readonly health: HealthRegistry) {}

  markStopping(): void {
    this.stopping = true;
  }

  @GrpcMethod(HEALTH_V1.service, 'Check')
  async check(): Promise<healthV1.HealthCheckResponse> {
    if (this.stopping) return { status: Status.NOT_SERVING };
    return { status: (await this.health.readiness()).ready ? Status.SERVING : Status.NOT_SERVING };
  }
}

/**
 * Wraps every gRPC and bus handler: carries the caller's request id into logs and onward hops, times it, and
 * turns failures into gRPC statuses (an RpcException, which Nest passes through unchanged).
 */
@Injectable()
export class GrpcServerInterceptor implements NestInterceptor {
  private readonly log;

  constructor(private readonly service: string) {
    this.log = serviceLogger(service);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'rpc') return next.handle();
    const metadata = context.switchToRpc().getContext<unknown>();
    // Bus handlers run in the context BusServer set up; gRPC handlers take the id from the call's metadata.
    const requestId =
      metadata instanceof Metadata ? acceptRequestId(metadata.get(REQUEST_ID_METADATA)[0]?.toString()) : (currentRequestId() ?? newRequestId());
    const end = rpcServerDuration.startTimer({ service: this.service, method: context.getHandler().name });
    return new Observable((subscriber) =>
      runWithRequestId(requestId, () =>
        next
          .handle()
          .pipe(
            tap({ complete: () => end({ code: 'OK' }) }),
            catchError((error: unknown) => {
              // AppErrors travel with their code; anything else is logged here and sent without its message.
              if (!(error instanceof AppError)) this.log.error({ err: error }, 'unhandled error in handler');
              const wire = toGrpcError(error);
              end({ code: grpcStatusName(wire.code) });
              return throwError(() => new RpcException(wire));
            }),
          )
          .subscribe(subscriber),
      ),
    );
  }
}
