import { Body, Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiExtraModels, ApiOkResponse, ApiProduces, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayConfig } from '@parley/config';
import { Bus } from '@parley/messaging';
import { BUS, CONFIG } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { ConsoleTokenAllowed } from '../auth/auth.guard';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { ResourceId } from '../http/resource-id';
import { ListEnvelope } from '../http/pagination';
import { CallDto, CallListDto, ClaimCallDto, RealtimeTokenDto } from './call.dto';
import { presentCall } from './call-presenter';
import { CallsClient } from './calls.client';
import { presentRealtimeToken } from './realtime-tokens.controller';
import { streamRinging } from './ringing-stream';

const EVENT_STREAM = /\btext\/event-stream\b/i;

/**
 * Calls a person answers: the ringing calls of the account (inbound calls to `simple` agents whose caller is on the
 * line, rendezvous whose first seat joined) and their claim. An operator console calls both with its console token
 * (docs/operators.md); a server may with an API key.
 */
@ApiTags('Calls')
@ApiExtraModels(CallListDto)
@ResourceId('call', 'call')
@Controller('v1/calls')
export class RingingController {
  constructor(
    private readonly calls: CallsClient,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Get('ringing')
  @ConsoleTokenAllowed()
  @Operation({
    summary: 'Watch for calls waiting to be answered',
    description: [
      'The account’s claimable calls that are `ringing` with somebody on the line (an inbound call to a `simple` agent; a rendezvous whose first seat joined), oldest first, at most 200.',
      'With `Accept: text/event-stream`: Server-Sent Events. First a `ringing` event (data: the call) for each call ringing now, then `ringing` for each call that starts ringing',
      'and `gone` (data: `{ "call_id", "reason": "claimed" | "ended", "call" }`) for each that stops; each call is announced once and gone once. Event ids are `{call_id}:ringing` and `{call_id}:gone`.',
      'A comment line is sent every 15 s. A stream opened with a console token sends `session-expired` (data: `{ "session_expires_at" }`) and closes at the console session’s end.',
      'Without that Accept: the list envelope (`has_more` false).',
      'Authenticates with an API key or an operator console’s token (`Authorization: Bearer rtk_…`, `POST /v1/realtime/tokens` role `console`); callable from another origin (CORS).',
    ].join(' '),
    permission: 'calls:read',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiOkResponse({
    description: 'The ringing calls, or their stream.',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(CallListDto) } },
      'text/event-stream': {
        schema: { type: 'string' },
        example: 'id: call_1:ringing\nevent: ringing\ndata: {"id":"call_1","object":"call","status":"ringing",…}\n\nid: call_1:gone\nevent: gone\ndata: {"call_id":"call_1","reason":"claimed","call":{…}}\n\n',
      },
    },
  })
  async ringing(@CurrentPrincipal() who: Principal, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<ListEnvelope<CallDto> | void> {
    const snapshot = async () => (await this.calls.call('listRinging', (s, md) => s.listRinging({ account_id: who.accountId }, md))).calls;
    if (EVENT_STREAM.test(request.headers.accept ?? '')) return streamRinging(this.bus, who.accountId, snapshot, request, reply, who.sessionExpiresAt);
    return { object: 'list', data: (await snapshot()).map(presentCall), has_more: false };
  }

  @Post(':id/claim')
  @ConsoleTokenAllowed()
  @Operation({
    summary: 'Answer a ringing call',
    description: [
      'Claims a ringing claimable call: of concurrent claims (from any number of consoles and replicas) exactly one wins; the others get 409 `conflict`.',
      'A phone call (an inbound call to a `simple` agent) is answered at once (`in_progress`, `call.started`); the answer is a token of role `operator` that joins it',
      'on the realtime socket at `url` within 60 s (the caller’s audio both ways). A rendezvous stays `ringing` until the claimer’s browser joins with the answer, a token',
      'of role `seat` for its free seat. `claimed_by` records the console token’s operator, else the body’s `operator`, else `api`.',
      'A call that is not ringing, already claimed, over, or not claimable (answered by a model) is 409 `conflict`; another account’s call is 404.',
      '`Idempotency-Key` is not honoured: a repeated claim must not hand out a second token; the winner’s retry gets 409 (claimed already, by them) and the call',
      'shows `claimed_by`.',
      'Authenticates with an API key or an operator console’s token; callable from another origin (CORS).',
    ].join(' '),
    permission: 'calls:write',
    problems: ['not_found', 'conflict', 'validation_error'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async claim(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: ClaimCallDto): Promise<RealtimeTokenDto> {
    const request = { account_id: who.accountId, id, operator: who.operator ?? body.operator ?? '' };
    return presentRealtimeToken(this.config, await this.calls.call('claimCall', (s, md) => s.claimCall(request, md)));
  }
}
