import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiQuery, ApiTags } from '@nestjs/swagger';
import { callsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { CALL_STATUSES, CallDto, CallListDto, CreateCallDto } from './call.dto';
import { CallsClient } from './calls.client';

const orNull = (s: string) => (s === '' ? null : s);

export function presentCall(c: callsV1.Call | undefined): CallDto {
  if (!c) throw new Error('calls service answered without a call');
  return {
    id: c.id,
    object: 'call',
    agent_id: c.agent_id,
    direction: c.direction,
    to: c.to,
    from: c.from,
    status: c.status,
    end_reason: orNull(c.end_reason),
    failure_reason: orNull(c.failure_reason),
    carrier: orNull(c.carrier),
    carrier_call_id: orNull(c.carrier_call_id),
    variables: c.variables,
    metadata: c.metadata,
    created_at: c.created_at,
    answered_at: orNull(c.answered_at),
    ended_at: orNull(c.ended_at),
    duration_seconds: c.duration_seconds,
    turns: c.turns,
    recording_available: c.recording_available,
    transcript_available: c.transcript_available,
  };
}

const FILTERS = ['agent_id', 'status', 'direction', 'created_after', 'created_before'];

function filter(query: Record<string, unknown>, name: string, allowed?: string[]): string {
  const value = query[name] === undefined ? '' : String(query[name]);
  if (value && allowed && !allowed.includes(value)) throw new AppError('invalid_request', `${name} must be one of ${allowed.join(', ')}.`);
  if (value && name.startsWith('created_') && Number.isNaN(Date.parse(value))) {
    throw new AppError('invalid_request', `${name} must be an RFC 3339 time.`);
  }
  return value;
}

@ApiTags('Calls')
@Controller('v1/calls')
export class CallsController {
  constructor(
    private readonly calls: CallsClient,
    private readonly cursors: CursorCodec,
  ) {}

  @Get()
  @Operation({ summary: 'List calls, newest first', permission: 'calls:read', list: true, query: FILTERS })
  @ApiQuery({ name: 'agent_id', required: false, schema: { type: 'string' } })
  @ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: CALL_STATUSES } })
  @ApiQuery({ name: 'direction', required: false, schema: { type: 'string', enum: ['outbound', 'inbound', 'web'] } })
  @ApiQuery({ name: 'created_after', required: false, schema: { type: 'string', format: 'date-time' } })
  @ApiQuery({ name: 'created_before', required: false, schema: { type: 'string', format: 'date-time' } })
  @ApiOkResponse({ type: CallListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<CallDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('calls', who.accountId, c));
    const request = {
      account_id: who.accountId,
      limit,
      after,
      agent_id: filter(query, 'agent_id'),
      status: filter(query, 'status', CALL_STATUSES),
      direction: filter(query, 'direction', ['outbound', 'inbound', 'web']),
      created_after: filter(query, 'created_after'),
      created_before: filter(query, 'created_before'),
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
    description: 'The call starts `queued`. Send an Idempotency-Key: a retried request never dials twice.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['validation_error', 'plan_limit_reached', 'idempotency_conflict'],
  })
  @ApiCreatedResponse({ type: CallDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateCallDto): Promise<CallDto> {
    const res = await this.calls.call('createCall', (s, md) =>
      s.createCall(
        { account_id: who.accountId, agent_id: body.agent_id, to: body.to, from: body.from ?? '', variables: body.variables ?? {}, metadata: body.metadata ?? {} },
        md,
      ),
    );
    return presentCall(res.call);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a call', permission: 'calls:read', problems: ['not_found'] })
  @ApiOkResponse({ type: CallDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('getCall', (s, md) => s.getCall({ account_id: who.accountId, id }, md))).call);
  }

  @Post(':id/end')
  @HttpCode(200)
  @Operation({
    summary: 'End a call',
    description: 'No body. Before it is answered the call ends `canceled`, after `hangup`. Ending an ended call is 409 `conflict`.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: CallDto })
  async end(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('endCall', (s, md) => s.endCall({ account_id: who.accountId, id, reason: 'hangup' }, md))).call);
  }

  @Post(':id/give-up')
  @HttpCode(200)
  @Operation({
    summary: 'Record that nobody answered',
    description: 'No body. Ends a call that was not answered with end_reason `no_answer`; 409 `conflict` once answered or ended.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: CallDto })
  async giveUp(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<CallDto> {
    return presentCall((await this.calls.call('endCall', (s, md) => s.endCall({ account_id: who.accountId, id, reason: 'given_up' }, md))).call);
  }
}
