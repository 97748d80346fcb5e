import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';
import { flowTransitionOfMessage } from '@parley/contracts';
import { Bus } from '@parley/messaging';
import { isWellFormedId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { BUS } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { NoBody } from '../http/no-body';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { CALL_STATUSES, CallDto, CallEventDto, CallListDto, CreateCallDto, InjectCallEventDto, RecordingUrlDto, TranscriptDto } from './call.dto';
import { streamCallEvents } from './call-event-stream';
import { presentCall, presentFlowTransition, presentGrounding } from './call-presenter';
import { CallsClient } from './calls.client';
import { mayHaveDialled } from './may-have-dialled';
import { Recordings } from './recordings';
import { ResourceId } from '../http/resource-id';

const FILTERS = ['agent_id', 'status', 'direction', 'created_after', 'created_before', 'workflow_run_id', 'project_id', 'successful'];

/** Filters that name an object by id: a value not of the form its service gives (prefix, 22 letters and digits) is refused. */
const ID_FILTERS: Record<string, { prefix: string; what: string }> = {
  workflow_run_id: { prefix: 'wfr', what: 'a workflow run id' },
  project_id: { prefix: 'prj', what: 'a project id' },
};

/** RFC 3339 date-time: a four-digit year, so every value is one PostgreSQL's timestamps hold (Date.parse alone took -004713-…). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function callListFilter(query: Record<string, unknown>, name: string, allowed?: string[]): string {
  const value = query[name] === undefined ? '' : String(query[name]);
  if (value && allowed && !allowed.includes(value)) throw new AppError('invalid_request', `${name} must be one of ${allowed.join(', ')}.`);
  if (value && name.startsWith('created_') && !(RFC3339.test(value) && !Number.isNaN(Date.parse(value)))) {
    throw new AppError('invalid_request', `${name} must be an RFC 3339 time.`);
  }
  const id = ID_FILTERS[name];
  if (value && id && !isWellFormedId(id.prefix, value)) throw new AppError('invalid_request', `${name} must be ${id.what} (${id.prefix}_…).`);
  return value;
}

@ApiTags('Calls')
@ResourceId('call', 'call')
@Controller('v1/calls')
export class CallsController {
  constructor(
    private readonly calls: CallsClient,
    private readonly cursors: CursorCodec,
    private readonly recordings: Recordings,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  @Get()
  @Operation({ summary: 'List calls, newest first', project: 'list', permission: 'calls:read', list: true, query: FILTERS })
  @ApiQuery({ name: 'agent_id', required: false, schema: { type: 'string' } })
  @ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: CALL_STATUSES } })
  @ApiQuery({ name: 'direction', required: false, schema: { type: 'string', enum: ['outbound', 'inbound', 'web'] } })
  @ApiQuery({ name: 'created_after', required: false, schema: { type: 'string', format: 'date-time' } })
  @ApiQuery({ name: 'created_before', required: false, schema: { type: 'string', format: 'date-time' } })
  @ApiQuery({
    name: 'workflow_run_id',
    required: false,
    description: 'Only the calls placed by this workflow run. A value that is not a run id (`wfr_…`) is refused with 400 `invalid_request`.',
    schema: { type: 'string', pattern: '^wfr_[0-9A-Za-z]{22}$' },
  })
  @ApiQuery({
    name: 'project_id',
    required: false,
    description: 'Only the calls of this project (a call belongs to its agent’s project). A value that is not a project id (`prj_…`) is refused with 400 `invalid_request`.',
    schema: { type: 'string', pattern: '^prj_[0-9A-Za-z]{22}$' },
  })
  @ApiQuery({
    name: 'successful',
    required: false,
    description: "Only the calls judged successful (`true`) or not (`false`) by their agent's `post_call.success`; undecided calls (`successful: null`) match neither.",
    schema: { type: 'string', enum: ['true', 'false'] },
  })
  @ApiOkResponse({ type: CallListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<CallDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('calls', who.accountId, c));
    const request = {
      account_id: who.accountId,
      limit,
      after,
      agent_id: callListFilter(query, 'agent_id'),
      status: callListFilter(query, 'status', CALL_STATUSES),
      direction: callListFilter(query, 'direction', ['outbound', 'inbound', 'web']),
      created_after: callListFilter(query, 'created_after'),
      created_before: callListFilter(query, 'created_before'),
      workflow_run_id: callListFilter(query, 'workflow_run_id'),
      project_id: callListFilter(query, 'project_id'),
      successful: callListFilter(query, 'successful', ['true', 'false']),
    };
    const page = await this.calls.call('listCalls', (s, md) => s.listCalls(request, md));
    return {
      object: 'list',
      data: page.data.map(presentCall),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('calls', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @Operation({
    summary: 'Start a call',
    description:
      'The call starts `queued`. Send an Idempotency-Key: a retried request never dials twice, even after a 503 that did not say ' +
      'nothing was dialled. When the platform is at capacity the call is refused before dialling: 503 `service_unavailable` ' +
      'with `Retry-After`.',
    project: 'body_agent', permission: 'calls:write',
    idempotent: 'forwarded',
    problems: ['validation_error', 'plan_limit_reached', 'idempotency_conflict', 'service_unavailable'],
  })
  @ApiCreatedResponse({ type: CallDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateCallDto, @Req() req: FastifyRequest): Promise<CallDto> {
    const key = req.headers['idempotency-key'];
    const request = {
      account_id: who.accountId,
      agent_id: body.agent_id,
      to: body.to,
      from: body.from ?? '',
      variables: body.variables ?? {},
      metadata: body.metadata ?? {},
      // The calls service keeps the key with the call, so a retry finds the call even when this answer is lost.
      idempotency_key: typeof key === 'string' ? key : '',
      answer_within_ms: this.calls.deadlineMs,
      // Only the workflows service places workflow calls: never taken from the API.
      workflow_run_id: '',
      workflow_recipient_id: '',
    };
    try {
      return presentCall((await this.calls.call('createCall', (s, md) => s.createCall(request, md))).call);
    } catch (error) {
      throw mayHaveDialled(error);
    }
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a call', project: { param: 'id', object: 'call' }, permission: 'calls:read', problems: ['not_found'] })
  @ApiOkResponse({ type: CallDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('getCall', (s, md) => s.getCall({ account_id: who.accountId, id }, md))).call);
  }

  @Post(':id/end')
  @HttpCode(200)
  @Operation({
    summary: 'End a call',
    description: 'No body. Before it is answered the call ends `canceled`, after `hangup`. Ending an ended call is 409 `conflict`.',
    project: { param: 'id', object: 'call' }, permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: CallDto })
  @NoBody()
  async end(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('endCall', (s, md) => s.endCall({ account_id: who.accountId, id, reason: 'hangup' }, md))).call);
  }

  @Post(':id/give-up')
  @HttpCode(200)
  @Operation({
    summary: 'Record that nobody answered',
    description:
      'No body. Ends a call that was not answered with end_reason `no_answer` (a ringing rendezvous; a ringing phone call nobody claimed: the carrier leg ' +
      'is hung up and the caller’s stream closed); 409 `conflict` once answered (claimed) or ended.',
    project: { param: 'id', object: 'call' }, permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: CallDto })
  @NoBody()
  async giveUp(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('endCall', (s, md) => s.endCall({ account_id: who.accountId, id, reason: 'given_up' }, md))).call);
  }

  @Get(':id/transcript')
  @Operation({
    summary: 'Retrieve the transcript',
    description: 'Turns in order, with offsets from the start of the call. Grows while the call is live; `final` once it is over.',
    project: { param: 'id', object: 'call' }, permission: 'calls:read',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: TranscriptDto })
  async transcript(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<TranscriptDto> {
    const res = await this.calls.call('getTranscript', (s, md) => s.getTranscript({ account_id: who.accountId, id }, md));
    return {
      object: 'transcript',
      call_id: id,
      final: res.call ? ['ended', 'failed'].includes(res.call.status) : false,
      turns: res.turns.map((t) => ({
        role: t.role as 'user' | 'assistant',
        text: t.text,
        language: t.language || null,
        start_seconds: Number(t.start_ms) / 1000,
        end_seconds: Number(t.end_ms) / 1000,
        interrupted: t.interrupted,
        speaker: t.speaker || null,
        grounding: presentGrounding(t.grounding),
        response_latency_ms: t.response_latency_ms || null,
      })),
      flow_transitions: res.transitions.map((t) => presentFlowTransition(id, flowTransitionOfMessage(t))),
    };
  }

  @Get(':id/recording')
  @Operation({
    summary: 'Download the recording',
    description: 'The audio file (WAV, 16-bit PCM, caller and agent mixed). 404 `not_found` while there is none.',
    project: { param: 'id', object: 'call' }, permission: 'calls:read',
    problems: ['not_found'],
  })
  @ApiProduces('audio/wav')
  @ApiOkResponse({ description: 'The recording.', content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } })
  async recording(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Res() reply: FastifyReply): Promise<void> {
    const rec = await this.calls.call('getRecording', (s, md) => s.getRecording({ account_id: who.accountId, id }, md));
    await this.recordings.send(reply, id, rec.key);
  }

  @Get(':id/recording_url')
  @Operation({
    summary: 'Get a playable recording link',
    description: 'A signed link that plays without an API key until it expires (RECORDING_URL_TTL_SECONDS, default one hour).',
    project: { param: 'id', object: 'call' }, permission: 'calls:read',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: RecordingUrlDto })
  async recordingUrl(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<RecordingUrlDto> {
    const rec = await this.calls.call('getRecording', (s, md) => s.getRecording({ account_id: who.accountId, id }, md));
    const link = this.recordings.link(who.accountId, id, rec.key);
    return { object: 'recording_url', call_id: id, url: link.url, expires_at: link.expiresAt.toISOString(), content_type: rec.content_type, duration_seconds: rec.duration_seconds };
  }

  @Get(':id/events')
  @Operation({
    summary: "Stream a call's events",
    description: [
      'Server-Sent Events (`text/event-stream`). Each message has `id`, `event` and JSON `data`:',
      '`call.status` (data: the call) first with the call as it is, then on every status change;',
      'every webhook event type of the call as it happens (data: the webhook envelope);',
      '`call.event` for events injected with POST (data: the call_event, without `delivered`);',
      '`call.flow.transitioned` each time the agent’s conversation flow moves to another node (data: the flow_transition, as in the transcript’s',
      '`flow_transitions`; not a webhook event).',
      'The stream ends after the call reaches `ended` or `failed` (at once for a call that is already over).',
      'A comment line is sent every 15 s to keep proxies from closing an idle stream.',
    ].join(' '),
    project: { param: 'id', object: 'call' }, permission: 'calls:read',
    problems: ['not_found'],
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } })
  async events(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await streamCallEvents(
      this.bus,
      id,
      async () => (await this.calls.call('getCall', (s, md) => s.getCall({ account_id: who.accountId, id }, md))).call,
      request,
      reply,
    );
  }

  @Post(':id/events')
  @HttpCode(202)
  @Operation({
    summary: 'Inject an event into a live call',
    description: [
      'Hands a named event with a JSON payload to the running conversation; it also appears on the call’s event stream as `call.event`.',
      'An `event` edge of the agent’s flow that waits for this name on the current node fires. An event no edge waits for yet is remembered',
      'by the conversation for the rest of the call and fires, once, when the flow reaches a node with an edge for it.',
      'The payload’s fields become call variables under dotted paths (`{"order": {"id": "o_1"}}` sets `order.id`), on the call’s `variables` too.',
      '`delivered` says whether the running conversation received it; false means the conversation has not taken it yet: an event for a call',
      'whose media has not started is kept and handed to the conversation when it starts. 409 `conflict` once the call is over.',
    ].join(' '),
    project: { param: 'id', object: 'call' }, permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict', 'validation_error', 'idempotency_conflict'],
  })
  @ApiAcceptedResponse({ type: CallEventDto })
  async inject(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: InjectCallEventDto): Promise<CallEventDto> {
    const payload = body.payload ?? {};
    const res = await this.calls.call('injectEvent', (s, md) =>
      s.injectEvent({ account_id: who.accountId, id, name: body.name, payload_json: JSON.stringify(payload) }, md),
    );
    return { object: 'call_event', id: res.event_id, call_id: id, name: body.name, payload, created_at: res.created_at, delivered: res.delivered };
  }
}
