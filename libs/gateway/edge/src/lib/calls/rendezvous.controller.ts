import { Body, Controller, Inject, Param, Post, Req } from '@nestjs/common';
import { ApiCreatedResponse, ApiTags } from '@nestjs/swagger';
import { FastifyRequest } from 'fastify';
import { GatewayConfig } from '@parley/config';
import { CONFIG } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { ResourceId } from '../http/resource-id';
import { CallDto, CreateRendezvousDto, RealtimeTokenDto, TakeSeatDto } from './call.dto';
import { presentCall } from './call-presenter';
import { CallsClient } from './calls.client';
import { presentRealtimeToken } from './realtime-tokens.controller';

/**
 * Rendezvous: a call between two people in browsers, introduced by a `webrtc` agent. The server only signals over
 * the realtime socket; the audio runs peer to peer (docs/rendezvous.md).
 */
@ApiTags('Calls')
@ResourceId('call', 'call')
@Controller('v1/calls')
export class RendezvousController {
  constructor(
    private readonly calls: CallsClient,
    @Inject(CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post('rendezvous')
  @Operation({
    summary: 'Place a call between two people',
    description:
      'Records a call (direction `web`, `queued`, carrier `web`) between two people in browsers, introduced by a `webrtc` agent, with two named `seats`. ' +
      'Take each seat with `POST /v1/calls/{id}/seat` and hand its token to one browser. The first seat joined rings the call; the second answers it ' +
      '(`call.started`). The second must join within the agent’s `ring_seconds` (0: 30) of the first, else the call ends `no_answer`. ' +
      'No model runs and no greeting is spoken: the server relays the browsers’ signalling and the audio runs between them. ' +
      'At capacity the call is refused before it is recorded: 503 `service_unavailable` with `Retry-After`.',
    project: 'body_agent', permission: 'calls:write',
    idempotent: 'forwarded',
    problems: ['validation_error', 'plan_limit_reached', 'idempotency_conflict', 'service_unavailable'],
  })
  @ApiCreatedResponse({ type: CallDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateRendezvousDto, @Req() req: FastifyRequest): Promise<CallDto> {
    const key = req.headers['idempotency-key'];
    const request = {
      account_id: who.accountId,
      agent_id: body.agent_id,
      seats: body.seats ?? [],
      variables: body.variables ?? {},
      metadata: body.metadata ?? {},
      idempotency_key: typeof key === 'string' ? key : '',
    };
    return presentCall((await this.calls.call('createRendezvous', (s, md) => s.createRendezvous(request, md))).call);
  }

  @Post(':id/seat')
  @Operation({
    summary: 'Take one end of a rendezvous',
    description:
      'A token that joins the rendezvous as `seat` from a browser (as `POST /v1/realtime/tokens` mints, role `seat`): redeemable once, within 60 s. ' +
      'A seat is taken once a browser joined with one of its tokens: then 409 `conflict`; so is the free seat of a claimed rendezvous (the claim’s token takes it). A call that is not a rendezvous, or is over, is 409; ' +
      'another account’s call is 404.',
    project: { param: 'id', object: 'call' }, permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'conflict'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async seat(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: TakeSeatDto): Promise<RealtimeTokenDto> {
    const request = { account_id: who.accountId, id, seat: body.seat };
    return presentRealtimeToken(this.config, await this.calls.call('takeSeat', (s, md) => s.takeSeat(request, md)));
  }
}
