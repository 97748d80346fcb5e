import { randomUUID } from 'node:crypto';
import { callsV1 } from '@parley/contracts';
import { MediaStreamEvent, MediaStreamProtocol, StreamNotice } from '@parley/carrier-core';
import { AudioEncoding, CallRecorder, decodeToPcm16, encodeFromPcm16, resamplePcm16 } from '@parley/audio';
import { flowTransitionMessage, OPERATOR_JOIN_GRACE_SECONDS, REALTIME_TOKEN_TTL_SECONDS } from '@parley/contracts';
import { agentSettings, EngineProviders, KnowledgeSearch, realClock, VoiceEngine } from '@parley/voice-engine';
import { MEDIA_HEARTBEAT_SECONDS } from '@parley/config';
import { serviceLogger } from '@parley/observability';
import { BlobStore } from '@parley/storage';
import type { EgressPolicy } from '@parley/egress';
import { AgentsPort, CallsPort, Transcript } from './calls-port';
import { recordingKey, resumedTimeline } from './resumed-timeline';
import { framesInTally, mediaStreamsActive, mediaStreamsTotal } from './media-metrics';
import { AppError } from '@parley/rpc';
import { isTransient, TranscriptWriter } from './transcript-writer';
import { CallLinks } from './call-links';
import { OperatorLine, PhoneLine } from './operator-line';
import { SeatLine } from './seat-line';
import { UsageMeter } from './usage-meter';
import { SeatCopies, SpeakerTranscriber } from './seat-copies';

/** The agent's transcribe_calls: calls between people (rendezvous, claimed calls) are transcribed only when it asks. */
function transcribesCalls(agent: { spec: Record<string, unknown>; effective: unknown } | undefined): boolean {
  return ((agent?.effective as Record<string, unknown> | undefined)?.['transcribe_calls'] ?? agent?.spec['transcribe_calls']) === true;
}

/** How long a rendezvous rings when its agent's `ring_seconds` is 0 (the spec's default). */
export const DEFAULT_RING_SECONDS = 30;

/** WebSocket close codes the worker uses: policy violation for a refused token, internal error otherwise. */
export const CLOSE_REFUSED = 1008;
export const CLOSE_ERROR = 1011;

/** What a session achieved for its call by now (the drain's report): the call is over, its recording stored. */
export interface SessionOutcome {
  callId: string;
  /** Ended by this worker (`shutdown`, the agent's hang-up, the stream's end) or known to be over already. */
  ended: boolean;
  /** `none`: the call is not recorded, or there was no audio to record. */
  recording: 'stored' | 'not_stored' | 'none';
}

/** The socket side of a session, so sessions can be driven without a network in tests. */
export interface StreamSocket {
  /** A frame of agent audio; returns when it will play (realClock's time). */
  audio(frame: string): number;
  /** Sent once the audio before it has been. */
  mark(frame: string): void;
  /** Sent at once; audio not yet sent is dropped. Returns until when the dropped audio would have played (realClock's time). */
  clear(frame: string): number;
  close(code: number, reason: string): void;
  /** Sent at once, ahead of queued audio (a notice for a browser); absent where the protocol has no notices. */
  text?(frame: string): void;
  /** Set when the socket paces audio itself: the frames the engine keeps queued in it (AudioSink.leadFrames). */
  readonly leadFrames?: number;
}

export interface CallSessionDeps {
  protocol: MediaStreamProtocol;
  calls: CallsPort;
  agents: AgentsPort;
  /** Where this worker takes commands (MediaWorkerService), sent with every stream it attaches; absent: none. */
  commandAddress?: string;
  recordings: BlobStore;
  providers: EngineProviders;
  /** Knowledge-base search for one account's calls (the agents service's Search); absent: no grounding. */
  knowledge?: (accountId: string) => KnowledgeSearch;
  /** KNOWLEDGE_RETRIEVAL_TIMEOUT_MS: a turn's lookup budget when the agent sets none. */
  retrievalTimeoutMs?: number;
  defaults: { model: string; sttProvider: string; ttsProvider: string; llmProvider?: string };
  /** Outbound requests of agent tools: EGRESS_ALLOWLIST and INTERNAL_HOSTS (absent: public https only); CALENDAR_BASE_URL. */
  tools?: { egress: EgressPolicy; internalHosts: string[]; calendarBaseUrl?: string };
  /** The transcript writer's bounds (tests shorten them); its defaults otherwise. */
  transcript?: { flushMs?: number; backoffMs?: number };
  /** Between heartbeats (and usage reports after turns); MEDIA_HEARTBEAT_SECONDS unless a test shortens it. */
  heartbeatMs?: number;
  /**
   * Where the two ends of a call meet (a claimed phone call's stream and its operator's browser, a rendezvous' two
   * seats): on this worker, or another over the bus. Absent: such streams are closed (`media_lost`).
   */
  links?: CallLinks;
}

/**
 * One carrier media stream, from `start` to `stop`: proves the stream belongs to a live call (the per-call token
 * in the stream parameters), runs the agent's voice engine on it, keeps the call alive with heartbeats,
 * reports turns (through a TranscriptWriter: in order, retried, flushed before the call is ended or the stream
 * finishes), records both sides when the agent asks for recordings, and closes the stream when the call is
 * ended from elsewhere: on the calls service's EndStream command (`endStream`), or, when that command could not be
 * delivered, on the next heartbeat's answer that the call is over.
 */
export class CallSession {
  private readonly log = serviceLogger('media-worker');
  private call: callsV1.Call | undefined;
  private streamId = '';
  private recorder: CallRecorder | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private finished = false;
  private finishing: Promise<void> | undefined;
  /** The call is known to be over (ended by this worker or elsewhere). */
  private over = false;
  private recordingStored = false;
  /** Until when a shutting-down session retries the calls service (0: one attempt, not shutting down). */
  private deadline = 0;
  private attaching: Promise<void> | undefined;
  /** Ids of the injected events this stream's conversation took (pending ones with the attach, then commands). */
  private readonly eventsTaken = new Set<string>();
  /** The stream's `start` is settled: frames go straight to the engine, not through a promise each (50 a second). */
  private attached = false;
  private readonly framesIn: { frames: number };
  private engine: VoiceEngine | undefined;
  private encoding: AudioEncoding = 'mulaw';
  private streamStartedAt = 0;
  /** Where this stream's offsets start on the call's timeline: after its earlier streams, when it resumes the call. */
  private timelineOffsetMs = 0;
  private transcript: TranscriptWriter | undefined;
  /**
   * The number of the last turn, tool-call or flow-transition report on this stream (AppendTurnRequest.seq,
   * RecordToolCallRequest.seq, RecordFlowTransitionRequest.seq: the calls service's dedupe key).
   */
  private reportSeq = 0;
  /** The vendors' usage of this stream (recognizers, model, synthesizers), reported to the calls service as it grows. */
  private readonly usage = new UsageMeter();
  private meteredProviders: EngineProviders | undefined;
  /** A usage report waits in the transcript writer: a newer one is not queued behind it (it sends the totals then). */
  private usageQueued = false;
  /** The usage grew by turns since the last report: the next heartbeat reports it. */
  private usageBehind = false;
  /** A report was queued (the first turn's): later turns leave theirs to the heartbeat. */
  private usageReported = false;
  private usageStreamId: string | undefined;

  /** call-end was sent (a session is ended once, by a command, its peer leaving, or its ring running out). */
  private endSent = false;
  /** Why the call ended, when this session was told (endStream): passed on to a rendezvous peer. */
  private endReason: string | undefined;

  /** Closes a stream that never said `start` (protocols with a start timeout: a browser that connected and went quiet). */
  private startTimer: NodeJS.Timeout | undefined;

  /**
   * A call whose two ends are people: the phone's side (it rings until the operator is there), the operator's, or
   * a rendezvous seat (no engine; its signalling relayed to the other seat).
   */
  private line: PhoneLine | OperatorLine | SeatLine | undefined;
  /** The ring (ring_seconds) of a phone call or a rendezvous' first seat; then a phone's wait for its operator. */
  private ringTimer: NodeJS.Timeout | undefined;
  /**
   * This session asked for the call's end (its ring ran out): the carrier hangs up first, so the stream's stop that
   * follows is that end, not the caller hanging up (which would race it to the record as `canceled`).
   */
  private endingHere = false;
  /** A rendezvous seat's copies of its microphone, when the agent records or transcribes. */
  private copies: SeatCopies | undefined;
  /** An operator's session transcribing the call (transcribe_calls): the caller's voice and the operator's own. */
  private transcribers: SpeakerTranscriber[] = [];
  private ownVoice: SpeakerTranscriber | undefined;
  /** The call's agent, read once (undefined when it could not be read). */
  private agent: Promise<Awaited<ReturnType<AgentsPort['getAgent']>> | undefined> | undefined;

  constructor(
    private readonly socket: StreamSocket,
    private readonly deps: CallSessionDeps,
  ) {
    this.framesIn = framesInTally(deps.protocol.carrier);
    const timeoutMs = deps.protocol.startTimeoutMs;
    if (timeoutMs) {
      this.startTimer = setTimeout(() => {
        if (!this.attaching) this.refuse('bad_request', `no start within ${timeoutMs / 1000} s`);
      }, timeoutMs);
      this.startTimer.unref();
    }
  }

  get callId(): string | undefined {
    return this.call?.id;
  }

  /** Attached to a call and not finished: commands about the call are this session's. */
  get holdsStream(): boolean {
    return this.call !== undefined && !this.finished;
  }

  /**
   * The call is over, ended elsewhere (the calls service's EndStream command): close the carrier stream now. The
   * session then finishes as for any closed stream (the turns being spoken are written, the recording stored).
   */
  endStream(reason: string): void {
    this.over = true;
    // A session shutting down ended the call itself and closes the stream as a drain does (1001).
    if (this.deadline || this.endSent) return;
    this.endSent = true;
    this.endReason = reason;
    this.notify({ type: 'call-end', reason });
    this.socket.close(1000, reason ? `call ended: ${reason}` : 'call ended');
  }

  /**
   * An answering machine took the call (the LeaveVoicemail command): the agent stops, speaks `message`, then ends
   * the call `voicemail`. A command that arrives while the stream is still attaching waits for its engine. False
   * when no conversation runs on this stream to speak it.
   */
  async leaveVoicemail(message: string): Promise<boolean> {
    await this.attaching;
    if (!this.engine) return false;
    void this.engine.leaveVoicemail(message).catch((e: unknown) => this.log.warn({ err: e, callId: this.call?.id }, 'voicemail message failed'));
    return true;
  }

  /**
   * A client's event for the conversation (the InjectEvent command), handed to its engine: an event edge of the
   * agent's flow acts on it. A command that arrives while the stream is still attaching waits for its engine; a
   * stream without a conversation (people on both ends) ignores it. An event the attach handed over already (its
   * `id` among the stream's pending events: it was kept as the stream attached) is not taken twice.
   */
  async injectEvent(name: string, payload: Record<string, unknown>, id = ''): Promise<void> {
    await this.attaching;
    if (!this.engine) return this.log.debug({ callId: this.call?.id, event: name }, 'injected event ignored: no conversation runs on this stream');
    if (id && this.eventsTaken.has(id)) return this.log.debug({ callId: this.call?.id, event: name, eventId: id }, 'injected event taken already with the attach');
    if (id) this.eventsTaken.add(id);
    this.engine.injectEvent(name, payload);
  }

  /**
   * One frame from the carrier. The caller's audio on an attached stream and marks (nearly every frame) are handled
   * at once and return nothing, so they cost no promise; any other frame returns the promise of its handling, which
   * the frames after it wait for.
   */
  onFrame(frame: string): Promise<void> | undefined {
    let event: MediaStreamEvent | undefined;
    try {
      event = this.deps.protocol.parse(frame);
    } catch (error) {
      this.log.warn({ err: error, callId: this.call?.id }, 'unreadable media frame ignored');
      return undefined;
    }
    if (!event) return undefined;
    if (event.type === 'audio' && this.attached) {
      this.audio(event);
      return undefined;
    }
    if (event.type === 'mark') {
      this.engine?.onMark(event.name);
      return undefined;
    }
    return this.onEvent(event);
  }

  private audio(event: Extract<MediaStreamEvent, { type: 'audio' }>): void {
    this.framesIn.frames++;
    if (this.call) {
      const pcm = decodeToPcm16(event.payload, this.encoding);
      // The carrier's timestamp places the frame on the call's timeline, so lost frames stay silent gaps.
      this.recorder?.write('caller', pcm, event.timestampMs + this.timelineOffsetMs);
      this.engine?.pushAudio(pcm);
      this.line?.heard(pcm);
      this.ownVoice?.push(pcm);
    }
  }

  private async onEvent(event: MediaStreamEvent): Promise<void> {
    switch (event.type) {
      case 'refuse':
        if (!this.attaching) this.refuse(event.refusal, event.message);
        return;
      case 'start':
        if (this.attaching) return;
        clearTimeout(this.startTimer);
        this.attaching = this.attach(event).finally(() => (this.attached = true));
        return this.attaching;
      case 'audio':
        await this.attaching;
        this.audio(event);
        return;
      case 'dtmf':
        await this.attaching;
        if (this.line instanceof OperatorLine) this.line.press(event.digit);
        else this.engine?.pushDtmf(event.digit);
        return;
      case 'transfer':
        await this.attaching;
        if (this.line instanceof OperatorLine) this.transferByOperator(event.destination);
        return;
      case 'stop':
        await this.attaching;
        return this.finish('stop');
      case 'signal':
        if (!this.attached) await this.attaching;
        if (this.line instanceof SeatLine) this.line.send(event.data);
        return;
      default:
        return;
    }
  }

  /** What this session achieved for its call so far; undefined before a call was attached. */
  get outcome(): SessionOutcome | undefined {
    if (!this.call) return undefined;
    const recorder = this.recorder ?? this.copies?.recorder;
    const recorded = !!recorder && recorder.durationMs > 0;
    return { callId: this.call.id, ended: this.over, recording: !recorded ? 'none' : this.recordingStored ? 'stored' : 'not_stored' };
  }

  /**
   * The worker is shutting down: end the call with reason `shutdown`, store its recording, close the stream — by
   * `deadline` (epoch ms): the transcript flush is cut to it, and a calls service that is away or restarting is
   * retried until then. `outcome` says afterwards (or at the deadline) what was done.
   */
  async shutdown(deadline: number): Promise<void> {
    this.deadline = deadline;
    await this.attaching?.catch(() => undefined);
    const call = this.call;
    if (call && !this.finished) {
      await this.engine?.stop();
      this.reportUsage(this.transcript, call, 'finish');
      await this.transcript?.flush(Math.max(0, deadline - Date.now()));
      await this.retried(() => this.deps.calls.endCall({ account_id: call.account_id, id: call.id, reason: 'shutdown' })).then(
        () => (this.over = true),
        (error: unknown) => {
          // A call that is over already (ended elsewhere meanwhile) needs no end.
          if (error instanceof AppError && error.code === 'conflict') this.over = true;
          else this.log.warn({ err: error, callId: call.id }, 'shutdown end failed');
        },
      );
    }
    this.notify({ type: 'call-end', reason: 'shutdown' });
    this.socket.close(1001, 'media worker shutting down');
    await this.onClose();
  }

  /** The socket closed (by either side, or the network). */
  async onClose(): Promise<void> {
    clearTimeout(this.startTimer);
    await this.attaching?.catch(() => undefined);
    await this.finish('closed');
  }

  /** The stream and number of the next report (unnumbered on a stream without an id to key it). */
  /** The deployment's providers, each counting what this stream sends it (UsageMeter). */
  private providers(): EngineProviders {
    const p = this.deps.providers;
    return (this.meteredProviders ??= {
      ...p,
      stt: (p.stt ?? []).map((x) => this.usage.stt(x)),
      tts: (p.tts ?? []).map((x) => this.usage.tts(x)),
      // Sessions of people (seats, operators) are given no model.
      llm: p.llm && this.usage.llm(p.llm),
    });
  }

  /**
   * Queues the stream's usage totals behind what the writer holds (ordered and retried with the turns): after the
   * stream's first turn, then on a heartbeat (MEDIA_HEARTBEAT_SECONDS) after turns, and always as the stream finishes,
   * so a call's cost grows while it runs, at most a heartbeat behind. Each report is a transaction on the call's row in
   * the calls service; one after every turn was as many as the turns themselves. The totals are read when sent.
   */
  private reportUsage(writer: TranscriptWriter | undefined, call: callsV1.Call, on: 'turn' | 'heartbeat' | 'finish'): void {
    if (on === 'turn' && this.usageReported) {
      this.usageBehind = true;
      return;
    }
    if (on === 'heartbeat' && !this.usageBehind) return;
    const record = this.deps.calls.recordUsage?.bind(this.deps.calls);
    if (!writer || !record || this.usageQueued || this.usage.empty) return;
    this.usageQueued = true;
    this.usageReported = true;
    this.usageBehind = false;
    const stream_id = (this.usageStreamId ??= this.streamId || randomUUID());
    writer.add('usage', () => {
      this.usageQueued = false;
      return record({ account_id: call.account_id, call_id: call.id, stream_id, items: this.usage.items() });
    });
  }

  private nextReport(): { stream_id: string; seq: number } {
    return { stream_id: this.streamId, seq: this.streamId ? ++this.reportSeq : 0 };
  }

  private async attach(event: Extract<MediaStreamEvent, { type: 'start' }>): Promise<void> {
    const carrier = this.deps.protocol.carrier;
    this.streamId = event.streamId;
    let resume = '';
    let seat = '';
    let role = '';
    let awaitClaim = false;
    let pendingEvents: callsV1.PendingEvent[] = [];
    try {
      const attached = await this.deps.calls.attachMedia({
        stream_token: event.parameters['token'] ?? '',
        carrier,
        carrier_call_id: event.carrierCallId,
        command_address: this.deps.commandAddress ?? '',
      });
      this.call = attached.call;
      resume = attached.resume;
      seat = attached.seat ?? '';
      role = attached.role ?? '';
      awaitClaim = attached.awaitClaim === true;
      pendingEvents = attached.pendingEvents ?? [];
    } catch (error) {
      const refusal = error instanceof AppError && typeof error.extra?.['refusal'] === 'string' ? error.extra['refusal'] : 'refused';
      this.log.warn({ err: error, carrierCallId: event.carrierCallId, refusal }, 'media stream refused');
      this.refuse(refusal, error instanceof AppError ? error.message : 'stream not accepted');
      return;
    }
    mediaStreamsTotal.inc({ carrier, outcome: 'attached' });
    if (event.parameters['client']) this.log.info({ callId: this.call.id, carrier, client: event.parameters['client'] }, 'browser attached');
    mediaStreamsActive.inc({ carrier });
    this.encoding = event.format.encoding;
    // A seat's recording is its copies' (SeatCopies); an operator's side is recorded by the phone's session, which
    // plays it to the caller.
    const recorded = this.call.recording_enabled && !seat && role !== 'operator';
    const resumed = resume
      ? await resumedTimeline({ calls: this.deps.calls, recordings: this.deps.recordings, warn: (fields, message) => this.log.warn(fields, message) }, this.call, event.format.sampleRate, recorded)
      : undefined;
    // The stream may have ended while that was read: its session is finished, and nothing is to start.
    if (this.finished) return;
    // The origin of the recording and of the transcript's offsets alike; a resumed call's goes on after its earlier streams.
    this.timelineOffsetMs = resumed?.offsetMs ?? 0;
    this.streamStartedAt = realClock.now() - this.timelineOffsetMs;
    if (recorded) this.recorder = new CallRecorder(event.format.sampleRate);
    if (resumed?.recording) this.recorder?.write('caller', resumed.recording, 0);
    const call = this.call;
    this.heartbeat = setInterval(() => {
      this.reportUsage(this.transcript, call, 'heartbeat');
      void this.beat(false);
    }, this.deps.heartbeatMs ?? MEDIA_HEARTBEAT_SECONDS * 1000);
    this.heartbeat.unref();
    if (seat) return this.takeSeat(call, seat, event.format.sampleRate);
    this.notify({ type: 'call-start', callId: call.id, agentId: call.agent_id, direction: call.direction, sampleRate: event.format.sampleRate });
    if (role === 'operator') return this.joinAsOperator(call, event.format.sampleRate);
    if (awaitClaim) return this.awaitClaim(call, event.format.sampleRate);
    await this.startEngine(call, event.format.sampleRate, resume, pendingEvents, resumed?.transcript);
  }

  /**
   * A call a person answers (a `simple` agent's inbound call): the caller hears ringback for the agent's
   * ring_seconds, until the operator who claimed it is on the link; nobody claimed it by then: given up
   * (`no_answer`). Claimed, the ring waits on for the operator's browser as long as the claim's token lets it
   * connect; one that never came ends the call `no_answer`.
   */
  private async awaitClaim(call: callsV1.Call, sampleRate: number): Promise<void> {
    const ringMs = await this.ringMs(call);
    const line = new PhoneLine({ play: (pcm) => this.play(pcm) }, sampleRate, {
      played: (pcm, at) => this.recorder?.write('agent', pcm, at - this.streamStartedAt),
      operatorJoined: () => clearTimeout(this.ringTimer),
      // A transfer moves the phone's leg elsewhere (the carrier ends this stream); anything else ends the call.
      operatorLeft: (reason) => reason !== 'transferred' && this.endStream(reason),
    });
    this.line = line;
    this.ringTimer = setTimeout(() => void this.ringOut(call, line), ringMs);
    this.ringTimer.unref();
    if (!this.deps.links) return this.endStream('media_lost');
    line.ring(await this.deps.links.join(call.id, line));
  }

  private async ringOut(call: callsV1.Call, line: PhoneLine): Promise<void> {
    if (line.answered || this.finished) return;
    this.endingHere = true;
    try {
      await this.deps.calls.endCall({ account_id: call.account_id, id: call.id, reason: 'given_up' });
      this.endStream('no_answer');
    } catch (error) {
      this.endingHere = false;
      if (!(error instanceof AppError && error.code === 'conflict')) return this.log.warn({ err: error, callId: call.id }, 'ringing call could not be given up');
      // Claimed (or ended) meanwhile: its operator has the claim token's window to connect.
      this.ringTimer = setTimeout(() => void this.operatorNeverCame(call, line), (REALTIME_TOKEN_TTL_SECONDS + OPERATOR_JOIN_GRACE_SECONDS) * 1000);
      this.ringTimer.unref();
    }
  }

  private async operatorNeverCame(call: callsV1.Call, line: PhoneLine): Promise<void> {
    if (line.answered || this.finished) return;
    this.log.warn({ callId: call.id }, 'the operator who claimed the call never connected');
    this.endingHere = true;
    await this.deps.calls.endCall({ account_id: call.account_id, id: call.id, reason: 'no_answer' }).then(
      () => this.endStream('no_answer'),
      (e: unknown) => this.log.warn({ err: e, callId: call.id }, 'claimed call could not be ended'),
    );
  }

  /** The operator's browser on a claimed call: meets the phone's stream on the call's link. */
  private async joinAsOperator(call: callsV1.Call, sampleRate: number): Promise<void> {
    // With the agent's transcribe_calls, both people are transcribed here, where both voices pass: the caller's
    // arriving on the link, the operator's from this socket; the operator's page sees each turn as it is said.
    const read = await this.agentOf(call);
    const agent = transcribesCalls(read) ? read : undefined;
    const caller = agent && this.speakerTranscriber(call, agent, sampleRate, { speaker: 'caller', role: 'user', notify: true });
    const operator = agent && this.speakerTranscriber(call, agent, sampleRate, { speaker: call.claimed_by || 'operator', role: 'assistant', notify: true });
    this.transcribers = [caller, operator].filter((t): t is SpeakerTranscriber => t !== undefined);
    this.ownVoice = operator;
    const origin = realClock.now();
    await Promise.all(this.transcribers.map((t) => t.open(origin)));
    const line = new OperatorLine({ play: (pcm) => this.play(pcm) }, sampleRate, {
      phoneLeft: (reason) => this.endStream(reason),
      callerAudio: caller && ((pcm, rate) => caller.push(rate === sampleRate ? pcm : resamplePcm16(pcm, rate, sampleRate))),
    });
    this.line = line;
    if (!this.deps.links) return this.endStream('media_lost');
    line.connect(await this.deps.links.join(call.id, line));
  }

  /** The operator puts the call through: the carrier moves the phone's leg, and this socket ends `transferred`. */
  private transferByOperator(destination: string): void {
    const call = this.call;
    if (!call) return;
    this.deps.calls.transferCall({ account_id: call.account_id, id: call.id, destination, stream_id: this.streamId }).then(
      () => this.endStream('transferred'),
      (error: unknown) => {
        this.log.warn({ err: error, callId: call.id, destination }, 'operator transfer failed');
        this.notify({ type: 'error', code: 'transfer_failed', message: error instanceof Error ? error.message : 'the transfer could not be placed' });
      },
    );
  }

  /** Plays `pcm` (the stream's rate) to the far end in the stream's encoding; returns when it will play. */
  private play(pcm: Int16Array): number {
    return this.socket.audio(this.deps.protocol.audio(this.streamId, encodeFromPcm16(pcm, this.encoding)));
  }

  /** How long the call rings before nobody answered: the agent's ring_seconds (0, or unreadable: the default). */
  private async ringMs(call: callsV1.Call): Promise<number> {
    const agent = await this.agentOf(call);
    const ring = Number((agent?.effective as Record<string, unknown> | undefined)?.['ring_seconds'] ?? agent?.spec['ring_seconds'] ?? 0);
    return (ring > 0 ? ring : DEFAULT_RING_SECONDS) * 1000;
  }

  private agentOf(call: callsV1.Call): Promise<Awaited<ReturnType<AgentsPort['getAgent']>> | undefined> {
    return (this.agent ??= this.deps.agents.getAgent(call.account_id, call.agent_id).catch((e: unknown) => {
      this.log.warn({ err: e, callId: call.id }, 'agent could not be read');
      return undefined;
    }));
  }

  /**
   * A rendezvous seat: meets the other seat on the call's link, or waits for it for the agent's ring_seconds; then
   * the call is given up (`no_answer`) and this seat told. When the agent records or transcribes calls, its client
   * is asked for a copy of its microphone (`call-start` `copy`).
   */
  private async takeSeat(call: callsV1.Call, seat: string, sampleRate: number): Promise<void> {
    this.copies = await this.seatCopies(call, seat, sampleRate);
    this.notify({ type: 'call-start', callId: call.id, agentId: call.agent_id, direction: call.direction, sampleRate, ...(this.copies ? { copy: true } : {}) });
    const links = this.deps.links;
    if (!links) return this.endStream('media_lost');
    const ringMs = await this.ringMs(call);
    const line = new SeatLine(seat, { notify: (n) => this.notify(n), met: () => clearTimeout(this.ringTimer), peerLeft: (reason) => this.endStream(reason) }, this.copies);
    this.line = line;
    this.ringTimer = setTimeout(
      () =>
        void this.deps.calls
          .endCall({ account_id: call.account_id, id: call.id, reason: 'given_up' })
          .then(() => this.endStream('no_answer'))
          .catch((e: unknown) => this.log.warn({ err: e, callId: call.id }, 'ringing rendezvous could not be given up')),
      ringMs,
    );
    this.ringTimer.unref();
    line.connect(await links.join(call.id, line));
  }

  /**
   * What a seat does with its client's copies: recorded when the call is (record_calls), transcribed as the seat's
   * own speaker when the agent's transcribe_calls says so; undefined when neither.
   */
  private async seatCopies(call: callsV1.Call, seat: string, sampleRate: number): Promise<SeatCopies | undefined> {
    const agent = await this.agentOf(call);
    const transcribe = transcribesCalls(agent);
    if (!call.recording_enabled && !transcribe) return undefined;
    const log = (message: string, fields?: Record<string, unknown>) => this.log.info({ callId: call.id, seat, ...fields }, message);
    const transcriber = agent && transcribe ? this.speakerTranscriber(call, agent, sampleRate, { speaker: seat, role: 'user' }) : undefined;
    const report = async (sent: boolean) =>
      this.deps.calls
        .reportSeatCopy?.({ account_id: call.account_id, call_id: call.id, seat, sent })
        .catch((e: unknown) => this.log.warn({ err: e, callId: call.id, seat }, 'whether the seat sent a copy could not be reported'));
    return new SeatCopies({ record: call.recording_enabled, transcriber, sampleRate, clock: realClock, report, log });
  }

  /**
   * One speaker of a call between people through the agent's recognizer: each utterance a transcript turn naming
   * `speaker` (written in order through this session's TranscriptWriter) and, with `notify`, a `transcript` notice to
   * this session's browser as it is said.
   */
  private speakerTranscriber(
    call: callsV1.Call,
    agent: NonNullable<Awaited<ReturnType<CallSession['agentOf']>>>,
    sampleRate: number,
    who: { speaker: string; role: 'user' | 'assistant'; notify?: boolean },
  ): SpeakerTranscriber {
    const language = agentSettings(agent.spec, agent.effective, this.deps.defaults, agent.runtime).languages[0];
    const stt = this.providers().stt ?? [];
    const writer = (this.transcript ??= new TranscriptWriter({ warn: (fields, message) => this.log.warn({ callId: call.id, ...fields }, message), ...this.deps.transcript }));
    return new SpeakerTranscriber({
      sampleRate,
      stt: [...stt.filter((p) => p.name === language.sttProvider), ...stt.filter((p) => p.name !== language.sttProvider)],
      language: language.code,
      vad: this.deps.providers.vad?.(sampleRate),
      clock: realClock,
      log: (message, fields) => this.log.info({ callId: call.id, speaker: who.speaker, ...fields }, message),
      onUtterance: (u) => {
        if (who.notify) this.notify({ type: 'transcript', role: who.role, text: u.text, language: u.language, startMs: u.startMs, endMs: u.endMs, interrupted: false });
        const req = {
          account_id: call.account_id,
          call_id: call.id,
          ...this.nextReport(),
          turn: {
            role: who.role,
            text: u.text,
            language: u.language,
            start_ms: u.startMs,
            end_ms: u.endMs,
            interrupted: false,
            speaker: who.speaker,
            grounding: [],
            response_latency_ms: 0,
          },
        };
        writer.add('turn', () => this.deps.calls.appendTurn(req));
        this.reportUsage(writer, call, 'turn');
      },
    });
  }

  /** Closes a stream that is not let in, with the protocol's code and reason for `refusal` (carriers: 1008). */
  private refuse(refusal: string, message: string): void {
    mediaStreamsTotal.inc({ carrier: this.deps.protocol.carrier, outcome: 'refused' });
    clearTimeout(this.startTimer);
    this.finished = true;
    const close = this.deps.protocol.refusal?.(refusal, message) ?? { code: CLOSE_REFUSED, reason: 'stream not accepted' };
    this.socket.close(close.code, close.reason);
  }

  /** Tells the far end `notice`, on protocols that carry notices (a browser's); a no-op on carriers. */
  private notify(notice: StreamNotice): void {
    if (this.deps.protocol.notice && this.socket.text) this.socket.text(this.deps.protocol.notice(this.streamId, notice));
  }

  /** `earlier`: the call's transcript so far, when this stream resumes it (`resume`). */
  private async startEngine(call: callsV1.Call, sampleRate: number, resume: string, pendingEvents: callsV1.PendingEvent[] = [], earlier?: Transcript): Promise<void> {
    let agent: Awaited<ReturnType<AgentsPort['getAgent']>>;
    try {
      agent = await this.deps.agents.getAgent(call.account_id, call.agent_id);
    } catch (error) {
      this.log.error({ err: error, callId: call.id }, 'agent could not be read; the call gets no conversation');
      return;
    }
    // A resumed conversation (a transfer that did not connect) picks up from the transcript so far.
    const { turns, transitions } = earlier ?? { turns: [], transitions: [] };
    const settings = agentSettings(agent.spec, agent.effective, this.deps.defaults, agent.runtime);
    if (settings.mode === 'webrtc') return;
    // An answering machine may be left the agent's voicemail message on an outbound call: synthesized ahead.
    const conversation = (agent.spec['conversation'] ?? {}) as { voicemail?: string; voicemail_message?: string };
    const voicemailMessage = call.direction === 'outbound' && conversation.voicemail === 'message' ? conversation.voicemail_message : undefined;
    const ids = { account_id: call.account_id, call_id: call.id };
    const transcript = new TranscriptWriter({ warn: (fields, message) => this.log.warn({ callId: call.id, ...fields }, message), ...this.deps.transcript });
    this.transcript = transcript;
    const knowledge = this.deps.knowledge?.(call.account_id);
    this.engine = new VoiceEngine(
      settings,
      knowledge ? { ...this.providers(), knowledge } : this.providers(),
      {
        clock: realClock,
        sink: {
          sendAudio: (frame) => {
            const at = this.play(frame);
            this.recorder?.write('agent', frame, at - this.streamStartedAt);
          },
          sendMark: (name) => this.socket.mark(this.deps.protocol.mark(this.streamId, name)),
          sendClear: () => {
            const until = this.socket.clear(this.deps.protocol.clear(this.streamId));
            // The audio dropped before it played was never heard: the recording says so.
            const from = realClock.now();
            if (this.recorder && until > from) this.recorder.write('agent', new Int16Array(Math.round(((until - from) * sampleRate) / 1000)), from - this.streamStartedAt);
          },
          leadFrames: this.socket.leadFrames,
        },
        // Numbered as spoken, so a retried append is stored once (unnumbered on a stream without an id to key it).
        onTurn: (turn) => {
          this.notify({ type: 'transcript', role: turn.role, text: turn.text, language: turn.language, startMs: turn.startMs, endMs: turn.endMs, interrupted: turn.interrupted });
          const req = {
            ...ids,
            ...this.nextReport(),
            turn: {
              role: turn.role,
              text: turn.text,
              language: turn.language,
              start_ms: turn.startMs,
              end_ms: turn.endMs,
              interrupted: turn.interrupted,
              speaker: '',
              // Which knowledge-base documents grounded an answer ([] on turns without).
              grounding: turn.grounding ?? [],
              response_latency_ms: turn.responseLatencyMs ?? 0,
            },
          };
          transcript.add('turn', () => this.deps.calls.appendTurn(req));
          this.reportUsage(transcript, call, 'turn');
        },
        // The transcript is written before the call ends, so call.ended follows its last turn.
        hangup: (reason) => {
          this.reportUsage(transcript, call, 'finish');
          void transcript
            .flush()
            .then(() => this.deps.calls.endCall({ account_id: call.account_id, id: call.id, reason: reason === 'agent' ? 'completed' : reason }))
            .catch((e) => this.log.warn({ err: e, callId: call.id }, 'hang-up failed'));
        },
        transfer: (destination) => this.deps.calls.transferCall({ account_id: call.account_id, id: call.id, destination, stream_id: this.streamId }),
        // Reported in order with the turns and numbered with them (call.tool.called once per report).
        recordToolCall: (report) => {
          const req = { ...ids, ...this.nextReport(), name: report.name, kind: report.kind, arguments_json: report.arguments, ok: report.ok, error: report.error ?? '' };
          transcript.add('tool_call', () => this.deps.calls.recordToolCall(req));
        },
        // Numbered in the same sequence (stored once however often it is retried), in order with the turns.
        recordTransition: (t) => {
          const req = { ...ids, ...this.nextReport(), ...flowTransitionMessage(t) };
          transcript.add('flow_transition', () => this.deps.calls.recordFlowTransition(req));
        },
        recordOptOut: () => this.deps.calls.recordOptOut({ ...ids, number: '' }),
        // The end-of-call survey's rating: written in order with the turns, before the call ends (a retry of it is
        // answered with the stored rating: one csat.received).
        recordRating: (score) => {
          const req = { ...ids, source: 'keypad', scale: 5, score, comment: '' };
          const record = this.deps.calls.recordRating?.bind(this.deps.calls);
          if (record) transcript.add('rating', () => record(req));
        },
        log: (message, fields) => this.log.info({ callId: call.id, ...fields }, message),
      },
      {
        sampleRate,
        variables: call.variables,
        marksEchoed: true,
        startedAt: this.streamStartedAt,
        callId: call.id,
        agentId: call.agent_id,
        tools: this.deps.tools,
        voicemailMessage,
        retrievalTimeoutMs: this.deps.retrievalTimeoutMs,
        ...(resume
          ? {
              resume: {
                reason: resume,
                turns: turns.filter((t) => t.role === 'user' || t.role === 'assistant').map((t) => ({ role: t.role as 'user' | 'assistant', text: t.text })),
                // The node the flow was on when the transfer was placed.
                node: transitions.at(-1)?.to_node,
              },
            }
          : {}),
      },
    );
    // Events injected before the stream attached, in order: the flow keeps them until it starts.
    for (const pending of pendingEvents) this.takePendingEvent(this.engine, call, pending);
    void this.engine.start().catch((e) => this.log.error({ err: e, callId: call.id }, 'conversation failed'));
  }

  /** An event injected before the stream attached (AttachMedia's pending events), handed to the new engine. */
  private takePendingEvent(engine: VoiceEngine, call: callsV1.Call, pending: callsV1.PendingEvent): void {
    const payload = eventPayload(pending.payload_json);
    if (!payload) return this.log.warn({ callId: call.id, event: pending.name, eventId: pending.id }, 'pending event ignored: its payload is not a JSON object');
    this.eventsTaken.add(pending.id);
    engine.injectEvent(pending.name, payload);
  }

  /**
   * Liveness for the reaper. An answer that the call is over closes the stream: the fallback when the EndStream
   * command did not reach this worker (at most MEDIA_HEARTBEAT_SECONDS late).
   */
  private async beat(stopped: boolean): Promise<void> {
    const call = this.call;
    if (!call) return;
    try {
      const live = await this.deps.calls.heartbeat({ account_id: call.account_id, call_id: call.id, stopped, stream_id: this.streamId });
      if (!live) this.over = true;
      if (!live && !stopped) {
        this.notify({ type: 'call-end', reason: '' });
        this.socket.close(1000, 'call over');
      }
    } catch (error) {
      this.log.warn({ err: error, callId: call.id }, 'media heartbeat failed');
    }
  }

  /** Once per session; a second caller (the drain, after the socket closed) waits for the first one's work. */
  private finish(why: 'stop' | 'closed'): Promise<void> {
    this.finished = true;
    return (this.finishing ??= this.finishOnce(why));
  }

  private async finishOnce(why: 'stop' | 'closed'): Promise<void> {
    clearInterval(this.heartbeat);
    const call = this.call;
    if (!call) return;
    mediaStreamsActive.dec({ carrier: this.deps.protocol.carrier });
    this.log.info({ callId: call.id, streamId: this.streamId, why }, 'media stream finished');
    clearTimeout(this.ringTimer);
    if (this.line) await this.leaveLine(call, this.line);
    await this.copies?.close();
    await Promise.all(this.transcribers.map((t) => t.close()));
    await this.engine?.stop();
    // The turns the call ended on included (the calls service takes them for a while after the end), and the usage.
    this.reportUsage(this.transcript, call, 'finish');
    await this.transcript?.flush(this.deadline ? Math.max(0, this.deadline - Date.now()) : undefined);
    await this.saveRecording(call);
    await this.beat(true);
    if (why === 'stop') {
      // The far end hung up (a browser's `hangup`): an answered call ends `completed`, as a carrier's hang-up does.
      this.notify({ type: 'call-end', reason: this.endReason === 'canceled' ? 'canceled' : 'completed' });
      this.socket.close(1000, 'stream stopped');
    }
  }

  /**
   * One end of a call between people finished: the other end is told, and its socket ends too (one end leaving ends
   * the call). A phone caller or the only seat leaving before anyone answered cancels the call (as a caller hanging
   * up before the answer); an answered one ends `completed` on the stopped heartbeat that follows. The calls service
   * decides which (`caller_left`): a claim may have answered the call before this line learnt it, and the EndStream
   * command then names `completed`.
   */
  private async leaveLine(call: callsV1.Call, line: PhoneLine | OperatorLine | SeatLine): Promise<void> {
    line.stop(this.endReason ?? 'completed');
    if (line instanceof OperatorLine || line.answered || this.over || this.endingHere) return;
    await this.deps.calls.endCall({ account_id: call.account_id, id: call.id, reason: 'caller_left' }).then(
      () => (this.endReason ??= 'canceled'),
      (e: unknown) => {
        if (!(e instanceof AppError && e.code === 'conflict')) this.log.warn({ err: e, callId: call.id }, 'ringing call could not be canceled');
      },
    );
  }

  private async saveRecording(call: callsV1.Call): Promise<void> {
    const recorder = this.recorder ?? this.copies?.recorder;
    if (!recorder || recorder.durationMs === 0) return;
    const key = recordingKey(call);
    const wav = recorder.finish();
    try {
      await this.deps.recordings.put(key, wav, 'audio/wav');
      await this.retried(() =>
        this.deps.calls.recordingReady({
          account_id: call.account_id,
          call_id: call.id,
          key,
          content_type: 'audio/wav',
          duration_seconds: Math.round(recorder.durationMs) / 1000,
        }),
      );
      this.recordingStored = true;
    } catch (error) {
      mediaStreamsTotal.inc({ carrier: this.deps.protocol.carrier, outcome: 'recording_failed' });
      this.log.error({ err: error, callId: call.id }, 'recording could not be saved');
    }
  }

  /**
   * `send` to the calls service; while shutting down, a transient failure (deadline, service away or restarting)
   * is retried with back-off until the drain's deadline.
   */
  private async retried(send: () => Promise<void>): Promise<void> {
    for (let waitMs = 200; ; waitMs = Math.min(2_000, waitMs * 2)) {
      try {
        return await send();
      } catch (error) {
        if (!isTransient(error) || Date.now() + waitMs >= this.deadline) throw error;
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }
}

/** An injected event's `payload_json` (empty: `{}`); undefined when it is not a JSON object. */
export function eventPayload(json: string): Record<string, unknown> | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(json || '{}');
  } catch {
    return undefined;
  }
  return typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
}
