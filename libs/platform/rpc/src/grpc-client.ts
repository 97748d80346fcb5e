import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { ClientGrpc, ClientProviderOptions, Transport } from '@nestjs/microservices';
import { firstValueFrom, Observable, timeout } from 'rxjs';
import { GrpcContract, PROTO_ROOT, REQUEST_ID_METADATA } from '@parley/contracts';
import { currentRequestId, rpcClientDuration } from '@parley/observability';
import { AppError, fromGrpcError, grpcStatusName } from './app-error';
import { PROTO_LOADER_OPTIONS } from './grpc-server';

export function grpcClientProvider(token: string, contract: GrpcContract, url: string): ClientProviderOptions {
  return {
    name: token,
    transport: Transport.GRPC,
    options: {
      url,
      package: contract.package,
      protoPath: join(PROTO_ROOT, contract.protoFile),
      loader: PROTO_LOADER_OPTIONS,
    },
  };
}

/**
 * A typed client of one service with a deadline on every call, the current request id in the metadata, and
 * failures turned into AppErrors (a peer that is down or too slow becomes `service_unavailable`, never a hang).
 */
export class RpcClient<S extends object> {
  private readonly service: S;

  constructor(
    grpc: ClientGrpc,
    private readonly contract: GrpcContract,
    private readonly target: string,
    private readonly timeoutMs: number,
  ) {
    this.service = grpc.getService<S>(contract.service);
  }

  async call<R>(method: keyof S & string, invoke: (service: S, metadata: Metadata) => Observable<R>): Promise<R> {
    const metadata = new Metadata();
    const requestId = currentRequestId();
    if (requestId) metadata.set(REQUEST_ID_METADATA, requestId);
    const end = rpcClientDuration.startTimer({ service: this.contract.service, method });
    try {
      const result = await firstValueFrom(invoke(this.service, metadata).pipe(timeout({ first: this.timeoutMs })));
      end({ code: 'OK' });
      return result;
    } catch (error) {
      const code = (error as { code?: number })?.code;
      end({ code: typeof code === 'number' ? grpcStatusName(code) : 'DEADLINE_EXCEEDED' });
      if ((error as Error)?.name === 'TimeoutError') {
        throw new AppError('service_unavailable', `The ${this.target} service did not answer in time; retry shortly.`);
      }
      throw fromGrpcError(error, this.target);
    }
  }
}
