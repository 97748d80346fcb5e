import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { AGENTS_V1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { grpcClientProvider } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AGENTS_GRPC, CallControl } from './call-control';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CarrierRegistry } from './carrier-registry';

@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [CallsGrpcController],
  providers: [CallsDomain, CallControl, { provide: CarrierRegistry, inject: [CONFIG], useFactory: (c: ServiceConfig) => CarrierRegistry.fromConfig(c) }],
})
export class CallsModule {}
