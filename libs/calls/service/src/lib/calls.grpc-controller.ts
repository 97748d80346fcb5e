import { Controller, Optional } from '@nestjs/common';
import { callsV1, EndReason, FLOW_TRANSITION_KINDS, FlowTransition, FlowTransitionKind, flowTransitionMessage, flowTransitionOfMessage, GroundingSource, InjectedCallEvent, SpendPeriod } from '@parley/contracts';
import { AppError, pageLimit } from '@parley/rpc';
import { CallAnalytics } from './call-analytics';
import { CallOverview } from './call-analytics.repository';
import { CallControl } from './call-control';
import { CallUsage } from './call-usage';
import { ZERO_PRICES } from './price-table';
import { MEDIA_END_REASONS } from './call-state';
import { CallsDomain, toCallMessage } from './calls.domain';
import { CallRating } from './calls.repository';
import { CallTurnEntity } from './entities';
import { MintedToken, WEB_CARRIER, WebCalls } from './web-calls';

const toToken = (t: MintedToken): callsV1.RealtimeToken => ({ token: t.token, expires_at: t.expiresAt.toISOString(), role: t.role, seat: t.seat ?? '' });

const { CallsServiceControllerMethods } = callsV1;

const toTurn = (t: CallTurnEntity): callsV1.Turn => ({
  role: t.role,
  text: t.text,
  language: t.language,
  start_ms: t.startMs,
  end_ms: t.endMs,
  interrupted: t.interrupted,
  speaker: t.speaker ?? '',
  grounding: t.grounding ?? [],
  response_latency_ms: t.responseLatencyMs ?? 0,
});

/** A grounding source as the worker sent it, with only its fields (a score that is not a number: 0). */
const toGroundingSource = (g: callsV1.GroundingSource): GroundingSource => ({
  document_id: g.document_id,
  knowledge_base_id: g.knowledge_base_id,
  title: g.title,
  score: Number.isFinite(g.score) ? g.score : 0,
});

/** Captured values that are a JSON object of scalars (strings, numbers, booleans). */
const isScalarObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => ['string', 'number', 'boolean'].includes(typeof x));

/** A reported move of a call's flow, checked: a kind the flow has, captured values that are a JSON object of scalars. */
function toFlowTransition(req: callsV1.RecordFlowTransitionRequest): FlowTransition {
  if (!FLOW_TRANSITION_KINDS.includes(req.kind as FlowTransitionKind)) throw AppError.validation([{ field: 'kind', message: `must be one of ${FLOW_TRANSITION_KINDS.join(', ')}` }]);
  let transition: FlowTransition | undefined;
  try {
    transition = flowTransitionOfMessage(req);
  } catch {
    transition = undefined;
  }
  if (!transition || (transition.captured !== undefined && !isScalarObject(transition.captured))) {
    throw AppError.validation([{ field: 'captured_json', message: 'must be a JSON object of strings, numbers and booleans' }]);
  }
  return transition;
}

const toRatingMessage = (r: CallRating): callsV1.Rating => ({
  id: r.id,
  call_id: r.callId,
  source: r.source,
  scale: r.scale,
  score: r.score,
  comment: r.comment ?? '',
  created_at: r.createdAt.toISOString(),
});

const analyticsQuery = (f: callsV1.CallAnalyticsFilter | undefined) => ({
  accountId: f?.account_id ?? '',
  from: f?.from ?? '',
  to: f?.to ?? '',
  agentId: f?.agent_id || undefined,
  direction: f?.direction || undefined,
  projectId: f?.project_id || undefined,
});

const toAnalyticsMessage = (o: CallOverview, currency: string): callsV1.CallAnalytics => ({
  calls: o.calls,
  answered: o.answered,
  answered_seconds: o.answeredSeconds,
  transferred: o.transferred,
  end_reasons: Object.entries(o.endReasons).map(([end_reason, count]) => ({ end_reason, count: count ?? 0 })),
  timed: o.timed,
  duration_avg_seconds: o.durationAvg ?? 0,
  duration_p50_seconds: o.durationP50 ?? 0,
  duration_p95_seconds: o.durationP95 ?? 0,
  csat_count: o.csatCount,
  csat_average: o.csatAverage ?? 0,
  cost: o.cost,
  cost_currency: currency,
  latency_turns: o.latencyTurns,
  response_latency_p50_ms: o.latencyP50 ?? 0,
  response_latency_p95_ms: o.latencyP95 ?? 0,
  agent_turns: o.agentTurns,
  barge_ins: o.bargeIns,
  success_evaluated: o.successEvaluated,
  successful: o.successful,
});

const toPendingEvent = (e: InjectedCallEvent): callsV1.PendingEvent => ({ id: e.id, name: e.name, payload_json: JSON.stringify(e.payload), created_at: e.created_at });

@Controller()
@CallsServiceControllerMethods()
export class CallsGrpcController implements callsV1.CallsServiceController {
  constructor(
    private readonly calls: CallsDomain,
    private readonly control: CallControl,
    private readonly web: WebCalls,
    @Optional() private readonly analytics?: CallAnalytics,
    @Optional() private readonly usage?: CallUsage,
  ) {}

  async createCall(req: callsV1.CreateCallRequest): Promise<callsV1.CreateCallResponse> {
    const call = await this.control.placeOutbound(req.account_id, {
      agentId: req.agent_id,
      to: req.to,
      from: req.from || undefined,
      variables: req.variables,
      metadata: req.metadata,
      idempotencyKey: req.idempotency_key || undefined,
      answerWithinMs: req.answer_within_ms,
      workflowRunId: req.workflow_run_id || undefined,
      workflowRecipientId: req.workflow_recipient_id || undefined,
    });
    return { call: toCallMessage(call) };
  }

  async createWebCall(req: callsV1.CreateWebCallRequest): Promise<callsV1.CreateWebCallResponse> {
    const { call, token } = await this.web.place(req.account_id, {
      agentId: req.agent_id,
      variables: req.variables,
      metadata: req.metadata,
      idempotencyKey: req.idempotency_key || undefined,
    });
    return { call: toCallMessage(call), token: toToken(token) };
  }

  async mintCallToken(req: callsV1.MintCallTokenRequest): Promise<callsV1.MintCallTokenResponse> {
    const { call, token } = await this.web.mint(req.account_id, req.id, (req.role || 'caller') as 'caller');
    return { call: toCallMessage(call), token: toToken(token) };
  }

  async createRendezvous(req: callsV1.CreateRendezvousRequest): Promise<callsV1.CreateRendezvousResponse> {
    const call = await this.web.rendezvous(req.account_id, {
      agentId: req.agent_id,
      seats: req.seats,
      variables: req.variables,
      metadata: req.metadata,
      idempotencyKey: req.idempotency_key || undefined,
    });
    return { call: toCallMessage(call) };
  }

  async takeSeat(req: callsV1.TakeSeatRequest): Promise<callsV1.TakeSeatResponse> {
    const { call, token } = await this.web.seat(req.account_id, req.id, req.seat);
    return { call: toCallMessage(call), token: toToken(token) };
  }

  async listRinging(req: callsV1.ListRingingRequest): Promise<callsV1.ListRingingResponse> {
    return { calls: (await this.calls.listRinging(req.account_id)).map(toCallMessage) };
  }

  async claimCall(req: callsV1.ClaimCallRequest): Promise<callsV1.ClaimCallResponse> {
    const { call, token } = await this.web.claim(req.account_id, req.id, req.operator);
    return { call: toCallMessage(call), token: toToken(token) };
  }

  async mintConsoleToken(req: callsV1.MintConsoleTokenRequest): Promise<callsV1.MintConsoleTokenResponse> {
    const minted = this.web.mintConsole(req.account_id, { operator: req.operator, ttlSeconds: req.ttl_seconds, refresh: req.refresh });
    return { token: toToken(minted.token), session_expires_at: minted.sessionExpiresAt.toISOString() };
  }

  async verifyConsoleToken(req: callsV1.VerifyConsoleTokenRequest): Promise<callsV1.VerifyConsoleTokenResponse> {
    const verified = this.web.verifyConsole(req.token);
    return { account_id: verified.accountId, operator: verified.operator, session_expires_at: verified.sessionExpiresAt.toISOString() };
  }

  async getCall(req: callsV1.GetCallRequest): Promise<callsV1.GetCallResponse> {
    return { call: toCallMessage(await this.calls.get(req.account_id, req.id)) };
  }

  async listCalls(req: callsV1.ListCallsRequest): Promise<callsV1.ListCallsResponse> {
    const page = await this.calls.list(req.account_id, pageLimit(req.limit), req.after, {
      agentId: req.agent_id || undefined,
      status: req.status || undefined,
      direction: req.direction || undefined,
      createdAfter: req.created_after || undefined,
      createdBefore: req.created_before || undefined,
      workflowRunId: req.workflow_run_id || undefined,
      projectId: req.project_id || undefined,
      successful: req.successful ? req.successful === 'true' : undefined,
    });
    return { data: page.items.map(toCallMessage), has_more: page.hasMore, next: page.next };
  }

  async endCall(req: callsV1.EndCallRequest): Promise<callsV1.EndCallResponse> {
    const reason = req.reason === 'given_up' || req.reason === 'caller_left' ? req.reason : (MEDIA_END_REASONS as readonly string[]).includes(req.reason) ? (req.reason as EndReason) : 'hangup';
    return { call: toCallMessage(await this.control.end(req.account_id, req.id, reason)) };
  }

  handleCarrierWebhook(req: callsV1.HandleCarrierWebhookRequest): Promise<callsV1.HandleCarrierWebhookResponse> {
    return this.control.handleWebhook(req);
  }

  async attachMedia(req: callsV1.AttachMediaRequest): Promise<callsV1.AttachMediaResponse> {
    // A browser's token (web calls) is redeemed once; a carrier's stream token names its call.
    if (req.carrier === WEB_CARRIER) {
      const { call, role, seat, awaitClaim, pending } = await this.web.join(req.stream_token, req.carrier_call_id, req.command_address);
      return { call: toCallMessage(call), resume: '', seat: seat ?? '', role, await_claim: awaitClaim ?? false, pending_events: (pending ?? []).map(toPendingEvent) };
    }
    const { call, resume, awaitClaim, pending } = await this.control.attachMedia(req.stream_token, req.carrier, req.carrier_call_id, req.command_address);
    return { call: toCallMessage(call), resume, seat: '', role: 'carrier', await_claim: awaitClaim, pending_events: pending.map(toPendingEvent) };
  }

  async mediaHeartbeat(req: callsV1.MediaHeartbeatRequest): Promise<callsV1.MediaHeartbeatResponse> {
    return { live: await this.control.mediaHeartbeat(req.account_id, req.call_id, req.stopped, req.stream_id) };
  }

  async appendTurn(req: callsV1.AppendTurnRequest): Promise<callsV1.AppendTurnResponse> {
    const turn = req.turn;
    if (!turn || (turn.role !== 'user' && turn.role !== 'assistant')) throw new AppError('invalid_request', 'A turn needs role user or assistant.');
    const turns = await this.calls.appendTurn(req.account_id, req.call_id, {
      role: turn.role,
      text: turn.text,
      language: turn.language,
      startMs: Number(turn.start_ms),
      endMs: Number(turn.end_ms),
      interrupted: turn.interrupted,
      speaker: turn.speaker || undefined,
      // The documents an answer was grounded in, best first; none on other turns.
      ...(turn.grounding?.length ? { grounding: turn.grounding.map(toGroundingSource) } : {}),
      stream: req.seq > 0 ? { id: req.stream_id, seq: req.seq } : undefined,
      ...(turn.response_latency_ms > 0 ? { responseLatencyMs: turn.response_latency_ms } : {}),
    });
    return { turns };
  }

  async recordUsage(req: callsV1.RecordUsageRequest): Promise<callsV1.RecordUsageResponse> {
    await this.usageOf().record(
      req.account_id,
      req.call_id,
      req.stream_id,
      (req.items ?? []).map((i) => ({ kind: i.kind, provider: i.provider, model: i.model, quantity: Number(i.quantity) })),
    );
    return {};
  }

  async getTranscript(req: callsV1.GetTranscriptRequest): Promise<callsV1.GetTranscriptResponse> {
    const { call, turns, transitions } = await this.calls.transcript(req.account_id, req.id);
    return { call: toCallMessage(call), turns: turns.map(toTurn), transitions: transitions.map(flowTransitionMessage) };
  }

  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<callsV1.RecordingReadyResponse> {
    await this.calls.recordingReady(req.account_id, req.call_id, req.key, req.content_type, req.duration_seconds);
    return {};
  }

  async reportSeatCopy(req: callsV1.ReportSeatCopyRequest): Promise<callsV1.ReportSeatCopyResponse> {
    await this.web.reportSeatCopy(req.account_id, req.call_id, req.seat, req.sent);
    return {};
  }

  async getRecording(req: callsV1.GetRecordingRequest): Promise<callsV1.GetRecordingResponse> {
    const call = await this.calls.get(req.account_id, req.id);
    if (!call.recordingAvailable || !call.recordingKey) throw AppError.notFound('recording');
    return { key: call.recordingKey, content_type: call.recordingContentType ?? 'audio/wav', duration_seconds: call.recordingDurationSeconds ?? 0 };
  }

  async injectEvent(req: callsV1.InjectEventRequest): Promise<callsV1.InjectEventResponse> {
    const { injected, delivered } = await this.calls.inject(req.account_id, req.id, req.name, JSON.parse(req.payload_json || '{}') as Record<string, unknown>);
    return { event_id: injected.id, created_at: injected.created_at, delivered };
  }

  async recordOptOut(req: callsV1.RecordOptOutRequest): Promise<callsV1.RecordOptOutResponse> {
    return { number: await this.calls.optOut(req.account_id, req.call_id, req.number) };
  }

  async checkDoNotCall(req: callsV1.CheckDoNotCallRequest): Promise<callsV1.CheckDoNotCallResponse> {
    return { listed: await this.calls.listedDoNotCall(req.account_id, req.numbers ?? []) };
  }

  async recordRating(req: callsV1.RecordRatingRequest): Promise<callsV1.RecordRatingResponse> {
    const { rating, created } = await this.calls.recordRating(req.account_id, req.call_id, {
      source: req.source,
      scale: req.scale,
      score: req.score,
      comment: req.comment,
    });
    return { rating: toRatingMessage(rating), created };
  }

  async getCallAnalytics(req: callsV1.GetCallAnalyticsRequest): Promise<callsV1.GetCallAnalyticsResponse> {
    return { analytics: toAnalyticsMessage(await this.analyticsOf().overview(analyticsQuery(req.filter)), this.usage?.prices.currency ?? ZERO_PRICES.currency) };
  }

  async putProjectCeilings(req: callsV1.PutProjectCeilingsRequest): Promise<callsV1.PutProjectCeilingsResponse> {
    if (!req.project_id || req.max_live_calls < 0) throw AppError.validation([{ field: 'max_live_calls', message: 'must be 0 or more' }]);
    const spend = req.spend ? { amount: req.spend.amount, currency: req.spend.currency, period: req.spend.period as SpendPeriod } : null;
    await this.calls.putProjectCeilings(req.account_id, req.project_id, req.max_live_calls, spend);
    return {};
  }

  async getCallTimeseries(req: callsV1.GetCallTimeseriesRequest): Promise<callsV1.GetCallTimeseriesResponse> {
    const buckets = await this.analyticsOf().timeseries(analyticsQuery(req.filter), req.bucket, req.timezone || 'UTC', req.max_buckets || undefined);
    return {
      buckets: buckets.map((b) => ({
        start: b.start,
        calls: b.calls,
        answered: b.answered,
        answered_seconds: b.answeredSeconds,
        transferred: b.transferred,
        csat_count: b.csatCount,
        csat_average: b.csatAverage ?? 0,
        cost: b.cost,
        agent_turns: b.agentTurns,
        barge_ins: b.bargeIns,
        successful: b.successful,
      })),
    };
  }

  private usageOf(): CallUsage {
    if (!this.usage) throw new AppError('internal_error', 'Usage is not recorded in this process.');
    return this.usage;
  }

  private analyticsOf(): CallAnalytics {
    if (!this.analytics) throw new AppError('internal_error', 'Analytics are not available in this process.');
    return this.analytics;
  }

  async recordToolCall(req: callsV1.RecordToolCallRequest): Promise<callsV1.RecordToolCallResponse> {
    let args: Record<string, unknown> = {};
    try {
      args = JSON.parse(req.arguments_json || '{}') as Record<string, unknown>;
    } catch {
      args = { raw: req.arguments_json };
    }
    await this.calls.toolCalled(
      req.account_id,
      req.call_id,
      { name: req.name, kind: req.kind, arguments: args, ok: req.ok, ...(req.error ? { error: req.error } : {}) },
      req.stream_id ? { id: req.stream_id, seq: req.seq } : undefined,
    );
    return {};
  }

  async recordFlowTransition(req: callsV1.RecordFlowTransitionRequest): Promise<callsV1.RecordFlowTransitionResponse> {
    await this.calls.flowTransitioned(req.account_id, req.call_id, toFlowTransition(req), req.stream_id ? { id: req.stream_id, seq: req.seq } : undefined);
    return {};
  }

  async transferCall(req: callsV1.TransferCallRequest): Promise<callsV1.TransferCallResponse> {
    return { call: toCallMessage(await this.control.transfer(req.account_id, req.id, req.destination, req.stream_id)) };
  }
}
