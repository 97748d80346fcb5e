import { CallActivity, callsV1, LIVE } from '@parley/contracts';
import { MediaStreamEvent, MediaStreamProtocol } from '@parley/carrier-core';
import { CallRecorder, decodeToPcm16 } from '@parley/audio';
import { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { BlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { mediaFramesIn, mediaStreamsActive, mediaStreamsTotal } from './media-metrics';

/** WebSocket close codes the worker uses: policy violation for a refused token, internal error otherwise. */
export const CLOSE_REFUSED = 1008;
export const CLOSE_ERROR = 1011;
const HEARTBEAT_MS = 10_000;

/** The socket side of a session, so sessions can be driven without a network in tests. */
export interface StreamSocket {
  send(frame: string): void;
  close(code: number, reason: string): void;
}

export interface CallSessionDeps {
  protocol: MediaStreamProtocol;
  calls: CallsPort;
  bus: Bus;
  recordings: BlobStore;
}

/**
 * One carrier media stream, from `start` to `stop`: proves the stream belongs to a live call (the per-call token
 * in the stream parameters), keeps the call alive with heartbeats, records the caller's audio when the agent
 * asks for recordings, and closes the stream when the call is ended from elsewhere.
 */
export class CallSession {
  private readonly log = serviceLogger('media-worker');
  private call: callsV1.Call | undefined;
  private streamId = '';
  private recorder: CallRecorder | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private stopListening: (() => void) | undefined;
  private finished = false;
  private attaching: Promise<void> | undefined;

  constructor(
    private readonly socket: StreamSocket,
    private readonly deps: CallSessionDeps,
  ) {}

  get callId(): string | undefined {
    return this.call?.id;
  }

  /** One frame from the carrier. */
  async onFrame(frame: string): Promise<void> {
    let event: MediaStreamEvent | undefined;
    try {
      event = this.deps.protocol.parse(frame);
    } catch (error) {
      this.log.warn({ err: error, callId: this.call?.id }, 'unreadable media frame ignored');
      return;
    }
    if (!event) return;
    switch (event.type) {
      case 'start':
        this.attaching = this.attach(event);
        return this.attaching;
      case 'audio':
        await this.attaching;
        mediaFramesIn.inc({ carrier: this.deps.protocol.carrier });
        if (this.recorder && this.call) {
          // The carrier's timestamp places the frame on the call's timeline, so lost frames stay silent gaps.
          this.recorder.write('caller', decodeToPcm16(event.payload, 'mulaw'), event.timestampMs);
        }
        return;
      case 'stop':
        await this.attaching;
        return this.finish('stop');
      default:
        return;
    }
  }

  /** The socket closed (by either side, or the network). */
  async onClose(): Promise<void> {
    await this.attaching?.catch(() => undefined);
    await this.finish('closed');
  }

  private async attach(event: Extract<MediaStreamEvent, { type: 'start' }>): Promise<void> {
    const carrier = this.deps.protocol.carrier;
    this.streamId = event.streamId;
    try {
      this.call = await this.deps.calls.attachMedia({
        stream_token: event.parameters['token'] ?? '',
        carrier,
        carrier_call_id: event.carrierCallId,
      });
    } catch (error) {
      mediaStreamsTotal.inc({ carrier, outcome: 'refused' });
      this.log.warn({ err: error, carrierCallId: event.carrierCallId }, 'media stream refused');
      this.finished = true;
      this.socket.close(CLOSE_REFUSED, 'stream not accepted');
      return;
    }
    mediaStreamsTotal.inc({ carrier, outcome: 'attached' });
    mediaStreamsActive.inc({ carrier });
    if (this.call.recording_enabled) this.recorder = new CallRecorder(event.format.sampleRate);
    const call = this.call;
    this.heartbeat = setInterval(() => void this.beat(false), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.stopListening = await this.deps.bus.listen(LIVE.callActivity(call.id).name, (payload) => {
      const activity = payload as CallActivity;
      if (activity.kind === 'status' && (activity.call.status === 'ended' || activity.call.status === 'failed')) {
        this.socket.close(1000, `call ${activity.call.status}`);
      }
    });
  }

  private async beat(stopped: boolean): Promise<void> {
    const call = this.call;
    if (!call) return;
    try {
      const live = await this.deps.calls.heartbeat({ account_id: call.account_id, call_id: call.id, stopped });
      if (!live && !stopped) this.socket.close(1000, 'call over');
    } catch (error) {
      this.log.warn({ err: error, callId: call.id }, 'media heartbeat failed');
    }
  }

  private async finish(why: 'stop' | 'closed'): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.heartbeat);
    this.stopListening?.();
    const call = this.call;
    if (!call) return;
    mediaStreamsActive.dec({ carrier: this.deps.protocol.carrier });
    this.log.info({ callId: call.id, streamId: this.streamId, why }, 'media stream finished');
    await this.saveRecording(call);
    await this.beat(true);
    if (why === 'stop') this.socket.close(1000, 'stream stopped');
  }

  private async saveRecording(call: callsV1.Call): Promise<void> {
    const recorder = this.recorder;
    if (!recorder || recorder.durationMs === 0) return;
    const key = `recordings/${call.account_id}/${call.id}.wav`;
    try {
      await this.deps.recordings.put(key, recorder.finish(), 'audio/wav');
      await this.deps.calls.recordingReady({
        account_id: call.account_id,
        call_id: call.id,
        key,
        content_type: 'audio/wav',
        duration_seconds: Math.round(recorder.durationMs) / 1000,
      });
    } catch (error) {
      mediaStreamsTotal.inc({ carrier: this.deps.protocol.carrier, outcome: 'recording_failed' });
      this.log.error({ err: error, callId: call.id }, 'recording could not be saved');
    }
  }
}
