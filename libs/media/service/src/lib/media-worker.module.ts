import { Inject, Injectable, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ClientGrpc, ClientsModule } from '@nestjs/microservices';
import { CALLS_V1, callsV1 } from '@parley/contracts';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { ServiceConfig } from '@parley/config';
import { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { grpcClientProvider, RpcClient } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { createBlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { MediaStreamServer } from './media-stream.server';

const CALLS_GRPC = 'CALLS_GRPC';

/** The calls service over gRPC, as sessions see it. */
class GrpcCallsPort implements CallsPort {
  private readonly client: RpcClient<callsV1.CallsServiceClient>;

  constructor(grpc: ClientGrpc, timeoutMs: number) {
    this.client = new RpcClient(grpc, CALLS_V1, 'calls', timeoutMs);
  }

  async attachMedia(req: callsV1.AttachMediaRequest): Promise<callsV1.Call> {
    const { call } = await this.client.call('attachMedia', (s, md) => s.attachMedia(req, md));
    if (!call) throw new Error('calls service answered without a call');
    return call;
  }

  async heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean> {
    return (await this.client.call('mediaHeartbeat', (s, md) => s.mediaHeartbeat(req, md))).live;
  }

  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<void> {
    await this.client.call('recordingReady', (s, md) => s.recordingReady(req, md));
  }
}

/** Opens the carrier-facing WebSocket server with the service and closes it first on shutdown. */
@Injectable()
class MediaStreamListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly server: MediaStreamServer;

  constructor(@Inject(CALLS_GRPC) grpc: ClientGrpc, @Inject(BUS) bus: Bus, @Inject(CONFIG) private readonly config: ServiceConfig) {
    this.server = new MediaStreamServer(
      { twilio: new TwilioMediaStreamProtocol() },
      { calls: new GrpcCallsPort(grpc, config.RPC_TIMEOUT_MS), bus, recordings: createBlobStore(config) },
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = await this.server.listen(this.config.MEDIA_PORT, this.config.MEDIA_HOST);
    serviceLogger('media-worker').info({ port, public: this.config.MEDIA_PUBLIC_URL }, 'media streams listening');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.server.close();
  }
}

/** Terminates carrier audio streams (and, with the conversation engine, runs the agent); stateless: no schema. */
@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: CALLS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(CALLS_GRPC, CALLS_V1, c.CALLS_GRPC_URL) },
    ]),
  ],
  providers: [MediaStreamListener],
})
export class MediaWorkerModule {}
