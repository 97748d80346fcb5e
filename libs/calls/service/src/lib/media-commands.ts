import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ClientGrpcProxy, ClientProxyFactory } from '@nestjs/microservices';
import { InjectedCallEvent, MEDIA_V1, mediaV1 } from '@parley/contracts';
import { serviceLogger } from '@parley/observability';
import { AppError, grpcClientProvider, RpcClient } from '@parley/rpc';
import { Counter } from 'prom-client';

/** One media worker's command server, as the calls service uses it. */
export interface MediaWorkerClient {
  endStream(req: mediaV1.EndStreamRequest): Promise<void>;
  leaveVoicemail(req: mediaV1.LeaveVoicemailRequest): Promise<void>;
  injectEvent(req: mediaV1.InjectEventRequest): Promise<void>;
  close(): void;
}

/** Opens a client of the media worker at `address` (host:port). */
export type MediaWorkerDialer = (address: string) => MediaWorkerClient;
export const MEDIA_WORKER_DIALER = 'MEDIA_WORKER_DIALER';

/** The real dialer: a gRPC client per address, with the deadline of every other hop. */
export function grpcMediaWorkerDialer(timeoutMs: number): MediaWorkerDialer {
  return (address) => {
    const { name: _name, ...options } = grpcClientProvider('media-worker', MEDIA_V1, address);
    const proxy = ClientProxyFactory.create(options) as unknown as ClientGrpcProxy;
    const rpc = new RpcClient<mediaV1.MediaWorkerServiceClient>(proxy, MEDIA_V1, 'media worker', timeoutMs);
    return {
      endStream: async (req) => void (await rpc.call('endStream', (s, md) => s.endStream(req, md))),
      leaveVoicemail: async (req) => void (await rpc.call('leaveVoicemail', (s, md) => s.leaveVoicemail(req, md))),
      injectEvent: async (req) => void (await rpc.call('injectEvent', (s, md) => s.injectEvent(req, md))),
      close: () => proxy.close(),
    };
  };
}

/**
 * delivered; not_found: the worker holds no open stream of the call (it finished, or moved to another worker);
 * undelivered: the worker could not be reached or failed; no_worker: no stream of the call ever attached.
 */
export type CommandOutcome = 'delivered' | 'not_found' | 'undelivered' | 'no_worker';

export const mediaCommands = new Counter({
  name: 'parley_media_commands_total',
  help: 'Commands sent to media workers by command (end_stream, leave_voicemail, inject_event) and outcome (delivered, not_found, undelivered: worker unreachable, the heartbeat answer or the reaper ends its stream instead; no_worker)',
  labelNames: ['command', 'outcome'] as const,
});

/** Clients kept open at once; the least recently used is closed beyond (workers come and go with their addresses). */
const MAX_CLIENTS = 64;

/**
 * Commands to the media worker that holds a call's stream, addressed by the worker's own command address (stored
 * with the call when its stream attached). A command never throws: one that cannot be delivered is logged and
 * counted, and what it asked for happens another way (an ended call's stream is closed by the worker's next
 * heartbeat answer, or the reaper fails a call whose worker is gone) or not at all (an injected event: its sender is
 * told it was not delivered).
 */
@Injectable()
export class MediaCommands implements OnApplicationShutdown {
  private readonly log = serviceLogger('calls');
  private readonly clients = new Map<string, MediaWorkerClient>();

  constructor(@Inject(MEDIA_WORKER_DIALER) private readonly dial: MediaWorkerDialer) {}

  /** The call is over (recorded): the worker closes its stream now. */
  endStream(call: { id: string; mediaWorker: string | null; endReason: string | null }): Promise<CommandOutcome> {
    return this.send('end_stream', call, (worker) => worker.endStream({ call_id: call.id, reason: call.endReason ?? '' }));
  }

  /** An answering machine took the call: the worker speaks `message`, then ends the call (`voicemail`). */
  leaveVoicemail(call: { id: string; mediaWorker: string | null }, message: string): Promise<CommandOutcome> {
    return this.send('leave_voicemail', call, (worker) => worker.leaveVoicemail({ call_id: call.id, message }));
  }

  /** A client's event for the call's conversation (what an event edge of its flow waits for). */
  injectEvent(call: { id: string; mediaWorker: string | null }, event: InjectedCallEvent): Promise<CommandOutcome> {
    return this.send('inject_event', call, (worker) =>
      worker.injectEvent({ call_id: call.id, event_id: event.id, name: event.name, payload_json: JSON.stringify(event.payload) }),
    );
  }

  onApplicationShutdown(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private async send(command: string, call: { id: string; mediaWorker: string | null }, run: (worker: MediaWorkerClient) => Promise<void>): Promise<CommandOutcome> {
    const outcome = await this.deliver(command, call, run);
    mediaCommands.inc({ command, outcome });
    return outcome;
  }

  private async deliver(command: string, call: { id: string; mediaWorker: string | null }, run: (worker: MediaWorkerClient) => Promise<void>): Promise<CommandOutcome> {
    if (!call.mediaWorker) return 'no_worker';
    try {
      await run(this.client(call.mediaWorker));
      return 'delivered';
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return 'not_found';
      this.log.warn({ err: error, callId: call.id, command, worker: call.mediaWorker }, 'media worker command not delivered');
      return 'undelivered';
    }
  }

  private client(address: string): MediaWorkerClient {
    let client = this.clients.get(address);
    if (client) this.clients.delete(address);
    else client = this.dial(address);
    // Re-inserted last: the map's order is the order of use.
    this.clients.set(address, client);
    if (this.clients.size > MAX_CLIENTS) {
      const [oldest, stale] = this.clients.entries().next().value as [string, MediaWorkerClient];
      this.clients.delete(oldest);
      stale.close();
    }
    return client;
  }
}
