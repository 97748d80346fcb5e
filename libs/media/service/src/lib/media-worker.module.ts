import { BeforeApplicationShutdown, Inject, Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import { ClientGrpc, ClientsModule } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1, CALLS_V1, callsV1, KNOWLEDGE_V1, knowledgeV1, readAgentRuntime } from '@parley/contracts';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { browserMediaProtocol } from '@parley/carrier-web';
import { REALTIME_PATH } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { parseEgressAllowlist } from '@parley/egress';
import { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { grpcClientProvider, RpcClient } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { LocalTextToSpeech } from '@parley/speech';
import { createBlobStore } from '@parley/storage';
import { EngineProviders } from '@parley/voice-engine';
import { AgentsPort, CallsPort, Transcript } from './calls-port';
import { CallLinks } from './call-links';
import { GrpcKnowledgeSearch } from './grpc-knowledge-search';
import { MediaLoadReporter } from './media-load-reporter';
import { MediaStreamServer } from './media-stream.server';
import { MediaWorkerGrpcController, SESSION_DIRECTORY, SessionDirectory } from './media-worker.grpc-controller';
import { speechProviders } from './speech-providers';

const CALLS_GRPC = 'CALLS_GRPC';

/**
 * How long the drain spends ending calls and storing recordings after CALL_DRAIN_SECONDS: four fifths of
 * SHUTDOWN_GRACE_MS. The process exits at CALL_DRAIN_SECONDS + SHUTDOWN_GRACE_MS after SIGTERM at the latest
 * (runProcess); the fifth left is for the rest of its shutdown, so the drain always reports before that.
 */
function drainEndMs(config: ServiceConfig): number {
  return Math.floor((config.SHUTDOWN_GRACE_MS * 4) / 5);
}
const AGENTS_GRPC = 'AGENTS_GRPC';
const KNOWLEDGE_GRPC = 'KNOWLEDGE_GRPC';

/** The calls service over gRPC, as sessions see it. */
class GrpcCallsPort implements CallsPort {
  private readonly client: RpcClient<callsV1.CallsServiceClient>;

  constructor(grpc: ClientGrpc, timeoutMs: number) {
    this.client = new RpcClient(grpc, CALLS_V1, 'calls', timeoutMs);
  }

  async attachMedia(req: callsV1.AttachMediaRequest) {
    const { call, resume, seat, role, await_claim, pending_events } = await this.client.call('attachMedia', (s, md) => s.attachMedia(req, md));
    if (!call) throw new Error('calls service answered without a call');
    return { call, resume, seat, role, awaitClaim: await_claim, pendingEvents: pending_events };
  }

  async getTranscript(req: callsV1.GetTranscriptRequest): Promise<Transcript> {
    const { turns, transitions } = await this.client.call('getTranscript', (s, md) => s.getTranscript(req, md));
    return { turns, transitions };
  }

  async heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean> {
    return (await this.client.call('mediaHeartbeat', (s, md) => s.mediaHeartbeat(req, md))).live;
  }

  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<void> {
    await this.client.call('recordingReady', (s, md) => s.recordingReady(req, md));
  }

  async reportSeatCopy(req: callsV1.ReportSeatCopyRequest): Promise<void> {
    await this.client.call('reportSeatCopy', (s, md) => s.reportSeatCopy(req, md));
  }

  async appendTurn(req: callsV1.AppendTurnRequest): Promise<void> {
    await this.client.call('appendTurn', (s, md) => s.appendTurn(req, md));
  }

  async endCall(req: callsV1.EndCallRequest): Promise<void> {
    await this.client.call('endCall', (s, md) => s.endCall(req, md));
  }

  async transferCall(req: callsV1.TransferCallRequest): Promise<void> {
    await this.client.call('transferCall', (s, md) => s.transferCall(req, md));
  }

  async recordToolCall(req: callsV1.RecordToolCallRequest): Promise<void> {
    await this.client.call('recordToolCall', (s, md) => s.recordToolCall(req, md));
  }

  async recordOptOut(req: callsV1.RecordOptOutRequest): Promise<void> {
    await this.client.call('recordOptOut', (s, md) => s.recordOptOut(req, md));
  }

  async recordFlowTransition(req: callsV1.RecordFlowTransitionRequest): Promise<void> {
    await this.client.call('recordFlowTransition', (s, md) => s.recordFlowTransition(req, md));
  }

  async recordRating(req: callsV1.RecordRatingRequest): Promise<void> {
    await this.client.call('recordRating', (s, md) => s.recordRating(req, md));
  }

  async recordUsage(req: callsV1.RecordUsageRequest): Promise<void> {
    await this.client.call('recordUsage', (s, md) => s.recordUsage(req, md));
  }
}

/**
 * The agents service over gRPC: the internal runtime read (GetAgentRuntime), which adds to the agent document
 * and its effective fields the tools the engine executes, secrets in the clear. Only this worker reads it.
 */
class GrpcAgentsPort implements AgentsPort {
  private readonly client: RpcClient<agentsV1.AgentsServiceClient>;

  constructor(grpc: ClientGrpc, timeoutMs: number) {
    this.client = new RpcClient(grpc, AGENTS_V1, 'agents', timeoutMs);
  }

  async getAgent(accountId: string, agentId: string) {
    return readAgentRuntime(await this.client.call('getAgentRuntime', (s, md) => s.getAgentRuntime({ account_id: accountId, id: agentId }, md)));
  }
}

/**
 * Opens the carrier-facing WebSocket server with the service and drains it on shutdown, before the service's gRPC
 * server closes: commands about the calls still running (EndStream, LeaveVoicemail) reach them while they drain.
 */
@Injectable()
class MediaStreamListener implements OnApplicationBootstrap, BeforeApplicationShutdown, SessionDirectory {
  private readonly server: MediaStreamServer;
  private readonly providers: EngineProviders;
  private readonly load: MediaLoadReporter;

  constructor(
    @Inject(CALLS_GRPC) calls: ClientGrpc,
    @Inject(AGENTS_GRPC) agents: ClientGrpc,
    @Inject(KNOWLEDGE_GRPC) knowledge: ClientGrpc,
    @Inject(BUS) bus: Bus,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {
    const [stt, tts] = [config.STT_PROVIDERS.split(',')[0], config.TTS_PROVIDERS.split(',')[0]];
    const knowledgeClient = new RpcClient<knowledgeV1.KnowledgeServiceClient>(knowledge, KNOWLEDGE_V1, 'knowledge', config.RPC_TIMEOUT_MS);
    this.providers = speechProviders(config);
    this.server = new MediaStreamServer(
      // Browsers are carriers too: web calls on the realtime socket, the dev phone's legs at /streams/dev.
      { twilio: new TwilioMediaStreamProtocol(), dev: browserMediaProtocol('dev'), web: browserMediaProtocol('web') },
      { [REALTIME_PATH]: 'web' },
      {
        calls: new GrpcCallsPort(calls, config.RPC_TIMEOUT_MS),
        agents: new GrpcAgentsPort(agents, config.RPC_TIMEOUT_MS),
        knowledge: (accountId) => new GrpcKnowledgeSearch(knowledgeClient, accountId),
        retrievalTimeoutMs: config.KNOWLEDGE_RETRIEVAL_TIMEOUT_MS,
        commandAddress: config.MEDIA_GRPC_ADVERTISE_URL ?? config.MEDIA_GRPC_URL,
        recordings: createBlobStore(config),
        // A claimed call's phone stream and its operator's browser may reach two workers: they meet on the bus.
        links: new CallLinks(bus),
        providers: this.providers,
        defaults: { model: config.LLM_MODEL, sttProvider: stt, ttsProvider: tts, llmProvider: this.providers.llm.name },
        tools: {
          egress: parseEgressAllowlist(config.EGRESS_ALLOWLIST ?? '').policy,
          internalHosts: config.INTERNAL_HOSTS.split(',').map((h) => h.trim()).filter(Boolean),
          calendarBaseUrl: config.CALENDAR_BASE_URL,
        },
      },
      config.MEDIA_STREAM_NICE,
    );
    this.load = new MediaLoadReporter(bus, () => this.server.activeStreams, config);
  }

  async onApplicationBootstrap(): Promise<void> {
    // The offline voice's worker threads load its engine (~0.3 s): now, not on the first call's greeting.
    for (const tts of this.providers.tts) if (tts instanceof LocalTextToSpeech) await tts.warmUp();
    const port = await this.server.listen(this.config.MEDIA_PORT, this.config.MEDIA_HOST);
    serviceLogger('media-worker').info({ port, public: this.config.MEDIA_PUBLIC_URL }, 'media streams listening');
    this.load.start();
  }

  sessionOf(callId: string) {
    return this.server.sessionOf(callId);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.load.stop();
    await this.server.close({ graceMs: this.config.CALL_DRAIN_SECONDS * 1000, endMs: drainEndMs(this.config) });
  }
}

/** Terminates carrier audio streams (and, with the voice engine, runs the agent); stateless: no schema. */
@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: CALLS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(CALLS_GRPC, CALLS_V1, c.CALLS_GRPC_URL) },
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
      // Knowledge bases are served by the agents deployable today.
      { name: KNOWLEDGE_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(KNOWLEDGE_GRPC, KNOWLEDGE_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [MediaWorkerGrpcController],
  providers: [MediaStreamListener, { provide: SESSION_DIRECTORY, useExisting: MediaStreamListener }],
})
export class MediaWorkerModule {}
