import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AgentMode, AGENTS_V1, agentsV1, callsV1, EndReason, InjectedCallEvent, readAgent, SuccessCriteria, VoicemailAction } from '@parley/contracts';
import { DEV_CARRIER_NAME, DEV_CARRIER_NUMBER } from '@parley/carrier-dev';
import { CarrierAdapter, CarrierError, CarrierStatusUpdate, isE164, isSipUri, MachineDetection, TransferResult } from '@parley/carrier-core';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { serviceLogger } from '@parley/observability';
import { defaultProjectId, SignedTokens } from '@parley/persistence';
import { AppError, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { CallAdmission, refusal, refusedBeforeDialling } from './call-admission';
import { CallStatus, isLive, reasonForEnd } from './call-state';
import { awaitsClaim, CallsDomain, Transition } from './calls.domain';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity } from './entities';

export const AGENTS_GRPC = 'AGENTS_GRPC';
/** Public path prefix of carrier webhooks on the gateway: `/carriers/{carrier}/status` and `/voice/{agent_id}`. */
export const CARRIER_WEBHOOK_PATH = '/carriers';
/** Path of the media worker's stream endpoint per carrier, below MEDIA_PUBLIC_URL. */
export const MEDIA_STREAM_PATH = '/streams';
const DEFAULT_RING_SECONDS = 30;
/** The query parameter of a carrier callback URL that names the call it is about. */
const CALL_HINT = 'call';

/** The call id a callback URL names, if any (a URL that does not parse names none). */
function callHint(url: string): string | undefined {
  try {
    return new URL(url).searchParams.get(CALL_HINT) || undefined;
  } catch {
    return undefined;
  }
}

/** What the per-call stream token proves: this carrier stream belongs to this call. */
export interface StreamClaims {
  call_id: string;
  account_id: string;
  /** The stream resumes the conversation after a transfer that did not connect (AttachMediaResponse.resume). */
  resume?: string;
}

export interface CreateCall {
  agentId: string;
  to: string;
  from?: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string>;
  /** The client's Idempotency-Key: the same key again gets the same call, dialled once. */
  idempotencyKey?: string;
  /** How long the caller waits for the answer (its deadline); 0 or unset: RPC_TIMEOUT_MS. */
  answerWithinMs?: number;
  /** Set by the workflows service only: the run (wfr_…) and its recipient this call is for. */
  workflowRunId?: string;
  workflowRecipientId?: string;
}

/** The answer leaves this long (at most a quarter of the budget) before the caller's deadline. */
const ANSWER_MARGIN_MS = 1000;

/** A known Idempotency-Key sent with another request is refused, as the gateway refuses it while it remembers. */
function sameRequest(known: CallEntity, input: CreateCall): CallEntity {
  const same =
    known.agentId === input.agentId &&
    known.to === input.to &&
    (!input.from || known.from === input.from) &&
    canonicalMap(known.variables) === canonicalMap(input.variables) &&
    canonicalMap(known.metadata) === canonicalMap(input.metadata) &&
    (known.workflowRunId ?? '') === (input.workflowRunId ?? '') &&
    (known.workflowRecipientId ?? '') === (input.workflowRecipientId ?? '');
  if (!same) throw new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.');
  return known;
}

const canonicalMap = (map: Record<string, string> | undefined) => JSON.stringify(Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)));

/**
 * Before dialling, an unavailable dependency (the agents service, the database, no carrier) is a 503 that says
 * nothing was dialled: it carries `retry_after_seconds`, which the gateway reads as "safe to retry".
 */
function saysNothingWasDialled(error: unknown): unknown {
  if (!(error instanceof AppError) || error.code !== 'service_unavailable' || error.extra?.['retry_after_seconds'] !== undefined) return error;
  return refusedBeforeDialling(error.message, 1);
}

export interface AgentSettings {
  recordCalls: boolean;
  carrier: string;
  ringSeconds: number;
  /** What to do when an answering machine picks up an outbound call (the agent's conversation.voicemail). */
  voicemail: VoicemailAction;
  voicemailMessage: string;
  /** Only agents that talk need the carrier to tell people from machines. */
  converses: boolean;
  mode: AgentMode;
  /** A person answers its inbound calls by claiming them (conversation mode, `simple` autonomy): they ring until then. */
  answersByClaim: boolean;
  /** The agent's project: its calls count against that project's ceilings. */
  projectId: string;
  /** The agent's `post_call.success`; null: it defines none. */
  success: SuccessCriteria | null;
}

/**
 * Calls and the carrier together: dials outbound calls, answers inbound ones with markup that streams their
 * audio to the media worker (with a per-call token), reads carrier status callbacks onto the state machine,
 * and ends and transfers calls at the carrier. Carrier specifics stay behind CarrierAdapter.
 */
@Injectable()
export class CallControl {
  private readonly agents: RpcClient<agentsV1.AgentsServiceClient>;
  private readonly streamTokens: SignedTokens<StreamClaims>;
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly calls: CallsDomain,
    private readonly carriers: CarrierRegistry,
    @Inject(AGENTS_GRPC) grpc: ClientGrpc,
    @Inject(CONFIG) private readonly config: ServiceConfig,
    private readonly admission: CallAdmission,
  ) {
    this.agents = new RpcClient(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
    this.streamTokens = new SignedTokens(resolveSecretKey(config), 'media-stream');
  }

  /**
   * Records the call (queued) and dials it, answering within the caller's deadline (`answerWithinMs`). Admission
   * first: a platform that cannot carry one more call refuses (503, Retry-After) before anything is recorded or
   * dialled. A create with an Idempotency-Key this account already used returns that call and dials nothing.
   *
   * Every error this throws was raised before dialling. Once the call is recorded the dial always happens and
   * the call is returned: dialled, failed (a carrier that refuses the call fails it, `carrier_error`), or still
   * `queued` when the carrier is slower than the deadline allows (the dial carries on and updates the record).
   */
  async placeOutbound(accountId: string, input: CreateCall): Promise<CallEntity> {
    const received = Date.now();
    const budget = input.answerWithinMs || this.config.RPC_TIMEOUT_MS;
    // Answer this much before the caller gives up, so the answer still reaches it (transit, a busy event loop).
    const answerBy = received + budget - Math.min(ANSWER_MARGIN_MS, budget / 4);
    if (input.idempotencyKey) {
      const known = await this.calls.findByIdempotencyKey(accountId, input.idempotencyKey);
      if (known) return sameRequest(known, input);
    }
    const ticket = await this.admission.admit(answerBy);
    let dialling = false;
    try {
      const { call, carrier, agent } = await this.recordOutbound(accountId, input, () => {
        if (Date.now() > answerBy) throw refusal('deadline', 'The call could not be set up before the request’s deadline.');
      }).catch((error: unknown) => {
        throw saysNothingWasDialled(error);
      });
      ticket.recorded();
      dialling = true;
      const dialled = this.dial(call, carrier, agent).finally(() => ticket.release());
      const late = new Promise<CallEntity>((resolve) => setTimeout(() => resolve(call), Math.max(0, answerBy - Date.now())).unref());
      return await Promise.race([dialled, late]);
    } finally {
      if (!dialling) ticket.release();
    }
  }

  private async recordOutbound(accountId: string, input: CreateCall, beforeCommit: () => void) {
    const problems = [
      ...(isE164(input.to) ? [] : [{ field: 'to', message: 'must be an E.164 number such as +15551234567' }]),
      ...(input.from === undefined || input.from === '' || isE164(input.from) ? [] : [{ field: 'from', message: 'must be an E.164 number' }]),
    ];
    if (problems.length) throw AppError.validation(problems);
    if (await this.calls.isDoNotCall(accountId, input.to)) {
      throw AppError.validation([{ field: 'to', message: 'is on this account’s do-not-call list: its owner asked not to be called again' }]);
    }
    const agent = await this.agentSettings(accountId, input.agentId, 'agent_id');
    // Nothing would talk on such a call: refused before anything is dialled.
    if (agent.mode === 'webrtc') throw AppError.validation([{ field: 'agent_id', message: 'names a webrtc agent: it introduces two browsers (POST /v1/calls/rendezvous), it places no phone calls' }]);
    if (agent.answersByClaim) {
      throw AppError.validation([{ field: 'agent_id', message: 'names a simple agent: a person answers the calls that ring in to it; outbound calls through it are not supported yet' }]);
    }
    const carrier = this.carrierFor(agent);
    const from = input.from || this.defaultFrom(carrier);
    if (!from) {
      throw AppError.validation([{ field: 'from', message: 'is required: this deployment has no default caller id (TWILIO_FROM_NUMBER)' }]);
    }
    const call = await this.calls.insert(
      {
        accountId,
        agentId: input.agentId,
        direction: 'outbound',
        to: input.to,
        from,
        status: 'queued',
        carrier: carrier.name,
        carrierCallId: null,
        recordingEnabled: agent.recordCalls,
        variables: input.variables ?? {},
        metadata: input.metadata ?? {},
        idempotencyKey: input.idempotencyKey || null,
        workflowRunId: input.workflowRunId || null,
        workflowRecipientId: input.workflowRecipientId || null,
        projectId: agent.projectId,
        successCriteria: agent.success,
      },
      beforeCommit,
    );
    return { call, carrier, agent };
  }

  /**
   * Dials a recorded call and records the outcome; never throws (the call exists either way). When the outcome
   * cannot be recorded, the call is returned as it is recorded and the reaper settles it.
   */
  private async dial(call: CallEntity, carrier: CarrierAdapter, agent: AgentSettings): Promise<CallEntity> {
    let placed: { carrierCallId: string };
    try {
      placed = await carrier.placeCall({
        to: call.to,
        from: call.from,
        streamUrl: this.streamUrl(carrier),
        streamToken: this.streamToken(call),
        // The call's own id rides on the callback URLs (signed by the carrier with them): a callback still finds
        // the call if recording the carrier's id after dialling failed.
        statusCallbackUrl: `${this.publicUrl}${CARRIER_WEBHOOK_PATH}/${carrier.name}/status?${CALL_HINT}=${call.id}`,
        timeoutSeconds: agent.ringSeconds,
        // Asked for every talking agent, so even `continue` can record that a machine answered.
        machineDetection: agent.converses,
        machineDetectionUrl: `${this.publicUrl}${CARRIER_WEBHOOK_PATH}/${carrier.name}/amd?${CALL_HINT}=${call.id}`,
        agentId: call.agentId,
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.log.warn({ err: error, callId: call.id }, 'carrier refused the call');
      return this.calls
        .transition(call.accountId, call.id, () => ({ status: 'failed', endReason: 'carrier_error', failureReason: reason }))
        .catch((e: unknown) => this.unrecorded(call, e));
    }
    return this.calls
      .amend(call.accountId, call.id, (c) => {
        c.carrierCallId = placed.carrierCallId;
        return [];
      })
      .catch((e: unknown) => this.unrecorded(call, e));
  }

  private unrecorded(call: CallEntity, error: unknown): CallEntity {
    this.log.error({ err: error, callId: call.id }, 'the dial’s outcome could not be recorded');
    return call;
  }

  /**
   * Ends a live call: from the API (`hangup`; `canceled` before answer), give-up (`no_answer`), the media worker
   * seeing the caller leave (`caller_left`: `completed` once answered, as the carrier's own hang-up, else `canceled`;
   * decided here because a claim may have answered the call before the worker learnt it), or the voice engine with
   * its own reason (`completed`, `silence`, `max_duration`, …).
   */
  async end(accountId: string, id: string, reason: 'hangup' | 'given_up' | 'caller_left' | EndReason): Promise<CallEntity> {
    const call = await this.calls.get(accountId, id);
    this.assertLive(call);
    if (reason === 'given_up' && call.status === 'in_progress') throw new AppError('conflict', 'The call was answered; end it instead of giving up.');
    await this.atCarrier(call, (carrier, carrierCallId) => carrier.endCall(carrierCallId));
    return this.calls.transition(accountId, id, (current) => {
      this.assertLive(current);
      if (reason === 'given_up') return { status: 'ended', endReason: 'no_answer' };
      if (reason === 'caller_left') return { status: 'ended', endReason: current.status === 'in_progress' ? 'completed' : 'canceled' };
      return { status: 'ended', endReason: reason === 'hangup' ? reasonForEnd(current.status) : reason };
    });
  }

  /**
   * Puts an answered call through to `destination` (E.164 or sip:) at its carrier; `call.transferred` follows once the
   * carrier took it. The call is marked transferred before the carrier is asked: the carrier stops the media stream
   * as it moves the call, and that stream's last heartbeat may arrive before the carrier's answer; it must find a
   * transfer, not a conversation that is over. A refusal unmarks it. `streamId`: the media stream placing the
   * transfer (a worker's session; empty when unknown), whose stop never ends the call.
   */
  async transfer(accountId: string, id: string, destination: string, streamId = ''): Promise<CallEntity> {
    if (!isE164(destination) && !isSipUri(destination)) {
      throw AppError.validation([{ field: 'destination', message: 'must be an E.164 number or a sip: URI' }]);
    }
    const call = await this.calls.amend(accountId, id, (current) => {
      if (current.status !== 'in_progress') throw new AppError('conflict', `Only an answered call can be transferred; this one is ${current.status}.`);
      if (!current.carrier || !current.carrierCallId) throw new AppError('conflict', 'This call has no carrier leg to transfer.');
      current.transferredTo = destination;
      current.transferStreamId = streamId || null;
      return [];
    });
    try {
      await this.atCarrier(call, (carrier, carrierCallId) =>
        carrier.transferCall(carrierCallId, destination, { resultUrl: `${this.publicUrl}${CARRIER_WEBHOOK_PATH}/${carrier.name}/transfer-result` }),
      );
    } catch (error) {
      await this.calls.amend(accountId, id, (current) => {
        if (current.transferredTo !== destination) return [];
        current.transferredTo = null;
        current.transferStreamId = null;
        return [];
      });
      throw error;
    }
    return this.calls.amend(accountId, id, async (current, m) => [await this.calls.emit(m, current, 'call.transferred', { destination })]);
  }

  /** A carrier webhook relayed by the gateway: verified here, where the carrier's credentials are. */
  async handleWebhook(req: callsV1.HandleCarrierWebhookRequest): Promise<callsV1.HandleCarrierWebhookResponse> {
    const carrier = this.carriers.pick(req.carrier);
    if (!carrier || !req.carrier) throw AppError.notFound('carrier');
    if (!carrier.verifyWebhook({ url: req.url, headers: req.headers, params: req.params })) {
      throw new AppError('unauthenticated', `The ${carrier.name} webhook signature is missing or does not match.`);
    }
    const hint = callHint(req.url);
    if (req.kind === 'status') {
      await this.applyStatus(carrier, this.parse(() => carrier.parseStatusCallback(req.params)), hint);
      return { status_code: 204, content_type: '', body: '' };
    }
    if (req.kind === 'transfer-result') {
      const markup = await this.afterTransfer(carrier, this.parse(() => carrier.parseTransferResult(req.params)));
      return { status_code: 200, content_type: markup.contentType, body: markup.body };
    }
    if (req.kind === 'amd') {
      await this.applyMachineDetection(carrier, this.parse(() => carrier.parseMachineDetection(req.params)), hint);
      return { status_code: 204, content_type: '', body: '' };
    }
    if (req.kind === 'voice') {
      const markup = await this.answerInbound(carrier, req.agent_id, req.params);
      return { status_code: 200, content_type: markup.contentType, body: markup.body };
    }
    throw AppError.notFound('carrier webhook');
  }

  /**
   * The media worker presents a stream's token; the call it names becomes answered and its media live, and the
   * worker's `commandAddress` is where commands about the call go from now on (the latest stream's worker).
   * A claimable call is answered by its claim instead: ringing and unclaimed, it stays `ringing`, the worker is told
   * to await the claim (`awaitClaim`), and the consoles watching the account see it ring. `pending`: the events
   * injected that no conversation took yet, in order, for the stream's conversation (handed over once).
   */
  async attachMedia(
    token: string,
    carrierName: string,
    carrierCallId: string,
    commandAddress = '',
  ): Promise<{ call: CallEntity; resume: string; awaitClaim: boolean; pending: InjectedCallEvent[] }> {
    const claims = this.streamTokens.verify(token);
    if (!claims) throw new AppError('unauthenticated', 'The media stream token is invalid or expired.');
    const call = await this.calls.get(claims.account_id, claims.call_id);
    if (call.carrier && (call.carrier !== carrierName || (call.carrierCallId && carrierCallId && call.carrierCallId !== carrierCallId))) {
      throw new AppError('unauthenticated', 'The media stream token belongs to another call.');
    }
    this.assertLive(call);
    // The stream names the carrier's call: recorded here if the dial's outcome could not be.
    if (call.carrier === carrierName && !call.carrierCallId && carrierCallId) {
      await this.calls.amend(call.accountId, call.id, (c) => {
        c.carrierCallId ??= carrierCallId;
        return [];
      });
    }
    const pending = await this.calls.attachMedia(call.accountId, call.id, commandAddress || null);
    if (call.claimable) {
      // Read after the attach: a claim needs the media attached, so one that won meanwhile shows here.
      const ringing = await this.calls.get(call.accountId, call.id);
      this.calls.announceRinging(ringing);
      return { call: ringing, resume: claims.resume ?? '', awaitClaim: awaitsClaim(ringing), pending };
    }
    const attached = await this.calls.transition(call.accountId, call.id, (c) => (c.status === 'queued' || c.status === 'ringing' ? { status: 'in_progress' } : undefined));
    return { call: attached, resume: claims.resume ?? '', awaitClaim: false, pending };
  }

  /**
   * Media liveness; when the stream stops, the conversation is over: an answered call that was not transferred
   * ends `completed` (the carrier's own completed callback then changes nothing).
   */
  async mediaHeartbeat(accountId: string, id: string, stopped: boolean, streamId = ''): Promise<boolean> {
    const call = await this.calls.touchMedia(accountId, id);
    if (!stopped) return isLive(call.status);
    // The stream that handed the call to the carrier ends nothing: the transfer's outcome decides what comes next (a
    // busy line can bring the caller back on a new stream before this stop arrives).
    const handedOver = streamId !== '' && streamId === call.transferStreamId;
    let live = isLive(call.status);
    if (!handedOver && call.status === 'in_progress' && !call.transferredTo) {
      const ended = await this.calls.transition(accountId, id, (c) => (c.status === 'in_progress' && !c.transferredTo ? { status: 'ended', endReason: 'completed' } : undefined));
      live = isLive(ended.status);
    }
    await this.calls.mediaStopped(accountId, id);
    return live;
  }

  /** A carrier status (a callback, or the carrier's API read by CarrierReconciler) onto the call's state machine. */
  async applyStatus(carrier: CarrierAdapter, update: CarrierStatusUpdate, hint?: string): Promise<void> {
    const call = await this.callOfCallback(carrier, update.carrierCallId, hint);
    if (!call) {
      this.log.info({ carrier: carrier.name, carrierCallId: update.carrierCallId }, 'status callback for an unknown call ignored');
      return;
    }
    await this.calls.transition(call.accountId, call.id, (current) => transitionForCarrierStatus(current, update));
  }

  /**
   * The call a carrier's callback is about: by the carrier's id, else by the call id on the callback's URL when the
   * call has no carrier id recorded (the dial's outcome could not be stored), which it then records. A hint naming a
   * call with another carrier id is another leg's, not this call's.
   */
  private async callOfCallback(carrier: CarrierAdapter, carrierCallId: string, hint: string | undefined): Promise<CallEntity | undefined> {
    const found = await this.calls.findByCarrierCall(carrier.name, carrierCallId);
    if (found || !hint || !carrierCallId) return found;
    const hinted = await this.calls.findForCarrier(carrier.name, hint);
    if (!hinted || (hinted.carrierCallId && hinted.carrierCallId !== carrierCallId)) return undefined;
    // The dial recorded the id between the two reads (a callback that raced the dial's answer): it is this call.
    if (hinted.carrierCallId) return hinted;
    this.log.info({ callId: hinted.id, carrierCallId }, 'carrier call id recorded from a callback');
    return this.calls.amend(hinted.accountId, hinted.id, (c) => {
      c.carrierCallId ??= carrierCallId;
      return [];
    });
  }

  /**
   * A transfer's other leg is over. Answered: the call is done (hang up; the carrier's completed callback ends it
   * `transferred`). Not answered: the caller comes back to the agent, on a new media stream whose token says so;
   * the call is no longer marked transferred.
   */
  private async afterTransfer(carrier: CarrierAdapter, result: TransferResult) {
    const found = await this.calls.findByCarrierCall(carrier.name, result.carrierCallId);
    if (!found || !isLive(found.status) || result.outcome === 'answered') return carrier.hangupMarkup();
    const call = await this.calls.amend(found.accountId, found.id, (c) => {
      c.transferredTo = null;
      return [];
    });
    return carrier.answerInbound({ streamUrl: this.streamUrl(carrier), streamToken: this.streamToken(call, `transfer_${result.outcome}`) });
  }

  /**
   * The carrier's verdict on who answered. A machine on a live call: `hangup` ends it at once (`voicemail`),
   * `message` commands the media worker to speak voicemail_message and hang up, `continue` carries on (the call will
   * end `voicemail`). The verdict is recorded either way. A `message` command that cannot be delivered (no stream
   * attached yet, the worker unreachable) is logged and counted; the conversation then carries on as `continue`.
   */
  private async applyMachineDetection(carrier: CarrierAdapter, verdict: MachineDetection, hint?: string): Promise<void> {
    const found = await this.callOfCallback(carrier, verdict.carrierCallId, hint);
    if (!found) return;
    const call = await this.calls.amend(found.accountId, found.id, (c) => {
      c.answeredBy = verdict.answeredBy;
      return [];
    });
    if (verdict.answeredBy !== 'machine' || !isLive(call.status)) return;
    const agent = await this.agentSettings(call.accountId, call.agentId).catch(() => undefined);
    if (agent?.voicemail === 'hangup') await this.end(call.accountId, call.id, 'voicemail');
    else if (agent?.voicemail === 'message') await this.calls.leaveVoicemail(call, agent.voicemailMessage);
  }

  private async answerInbound(carrier: CarrierAdapter, agentId: string, params: Record<string, string>) {
    const inbound = this.parse(() => carrier.parseInbound(params));
    const { account_id: accountId } = await this.agents.call('locateAgent', (s, md) => s.locateAgent({ id: agentId }, md));
    // Carriers retry a slow voice webhook: the same carrier call gets the same Parley call.
    const known = await this.calls.findByCarrierCall(carrier.name, inbound.carrierCallId);
    const agent = known ? undefined : await this.agentSettings(accountId, agentId);
    const call =
      known ??
      (await this.calls.insert({
        accountId,
        agentId,
        direction: 'inbound',
        to: inbound.to,
        from: inbound.from,
        status: 'ringing',
        carrier: carrier.name,
        carrierCallId: inbound.carrierCallId,
        recordingEnabled: agent?.recordCalls ?? false,
        variables: {},
        metadata: {},
        claimable: agent?.answersByClaim ?? false,
        projectId: agent?.projectId ?? defaultProjectId(accountId),
        successCriteria: agent?.success,
      }));
    return carrier.answerInbound({ streamUrl: this.streamUrl(carrier), streamToken: this.streamToken(call) });
  }

  /** What placing a call needs of the agent; `field` names the request field to blame when there is no such agent. */
  async agentSettings(accountId: string, agentId: string, field?: string): Promise<AgentSettings> {
    try {
      const { agent } = await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: agentId }, md));
      if (!agent) throw AppError.notFound('agent');
      const { spec, effective } = readAgent(agent);
      return {
        recordCalls: effective.record_calls === true,
        carrier: effective.carrier ?? '',
        ringSeconds: spec.ring_seconds || DEFAULT_RING_SECONDS,
        voicemail: spec.conversation?.voicemail ?? 'continue',
        voicemailMessage: spec.conversation?.voicemail_message ?? '',
        converses: (spec.mode ?? 'conversation') === 'conversation',
        mode: spec.mode ?? 'conversation',
        answersByClaim: (spec.mode ?? 'conversation') === 'conversation' && effective.autonomy === 'simple',
        projectId: agent.project_id || defaultProjectId(accountId),
        success: spec.post_call?.success ?? null,
      };
    } catch (error) {
      if (field && error instanceof AppError && error.code === 'not_found') {
        throw AppError.validation([{ field, message: 'names no agent of this account' }]);
      }
      throw error;
    }
  }

  private carrierFor(agent: AgentSettings): CarrierAdapter {
    const carrier = this.carriers.pick(agent.carrier);
    if (carrier) return carrier;
    if (agent.carrier) {
      throw AppError.validation([{ field: 'agent_id', message: `the agent's carrier "${agent.carrier}" is not configured on this deployment` }]);
    }
    throw new AppError(
      'service_unavailable',
      'No telephony carrier is configured on this deployment (set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, or DEV_CARRIER=on for the dev phone).',
    );
  }

  private defaultFrom(carrier: CarrierAdapter): string | undefined {
    if (carrier.name === 'twilio') return this.config.TWILIO_FROM_NUMBER;
    // Nobody owns numbers on the dev carrier: its calls come from its one documented number.
    return carrier.name === DEV_CARRIER_NAME ? DEV_CARRIER_NUMBER : undefined;
  }

  private streamUrl(carrier: CarrierAdapter): string {
    return `${this.config.MEDIA_PUBLIC_URL.replace(/\/+$/, '')}${MEDIA_STREAM_PATH}/${carrier.name}`;
  }

  private streamToken(call: CallEntity, resume?: string): string {
    return this.streamTokens.sign({ call_id: call.id, account_id: call.accountId, ...(resume ? { resume } : {}) }, this.config.STREAM_TOKEN_TTL_SECONDS).token;
  }

  private get publicUrl(): string {
    return this.config.PUBLIC_URL.replace(/\/+$/, '');
  }

  private assertLive(call: CallEntity): void {
    if (!isLive(call.status)) throw new AppError('conflict', `The call has already ${call.status === 'failed' ? 'failed' : 'ended'}.`);
  }

  /** Runs a carrier operation on the call's leg; a leg that is already gone is not an error. */
  private async atCarrier(call: CallEntity, run: (carrier: CarrierAdapter, carrierCallId: string) => Promise<void>): Promise<void> {
    const carrier = call.carrier ? this.carriers.pick(call.carrier) : undefined;
    if (!carrier || !call.carrierCallId) return;
    try {
      await run(carrier, call.carrierCallId);
    } catch (error) {
      if (error instanceof CarrierError && (error.code === 'not_found' || error.code === 'call_state')) return;
      if (error instanceof CarrierError && error.code === 'invalid_request') throw new AppError('conflict', error.message);
      throw new AppError('service_unavailable', `The carrier did not carry out the request: ${(error as Error).message}`);
    }
  }

  private parse<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw new AppError('invalid_request', (error as Error).message);
    }
  }
}

/**
 * How a carrier status lands on the state machine. Carriers deliver callbacks late and out of order (a ringing
 * after the answer, a completed after the API ended the call): anything that would move backwards is ignored.
 * A claimable call is answered by its claim: the carrier's answer is only its leg's (the caller hears ringback).
 */
export function transitionForCarrierStatus(
  call: { status: CallStatus; transferredTo: string | null; claimable: boolean },
  update: CarrierStatusUpdate,
): Transition | undefined {
  if (!isLive(call.status)) return undefined;
  const unanswered = call.status !== 'in_progress';
  switch (update.status) {
    case 'queued':
      return undefined;
    case 'ringing':
      return call.status === 'queued' ? { status: 'ringing' } : undefined;
    case 'in_progress':
      return unanswered && !call.claimable ? { status: 'in_progress' } : undefined;
    case 'completed':
      return { status: 'ended', endReason: call.transferredTo ? 'transferred' : unanswered ? 'canceled' : 'completed' };
    case 'busy':
      return { status: 'ended', endReason: 'busy' };
    case 'no_answer':
      return { status: 'ended', endReason: 'no_answer' };
    case 'canceled':
      return { status: 'ended', endReason: 'canceled' };
    case 'failed':
      return { status: 'failed', endReason: 'carrier_error', failureReason: 'The carrier could not connect the call.' };
  }
}
