import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { AGENTS_V1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { grpcClientProvider } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AGENTS_GRPC, CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';

@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [CallsGrpcController],
  providers: [CallsDomain],
})
export class CallsModule {}
