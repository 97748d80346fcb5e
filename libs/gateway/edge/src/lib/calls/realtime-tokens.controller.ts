import { Body, Controller, Inject, Param, Post, Req } from '@nestjs/common';
import { ApiCreatedResponse, ApiTags } from '@nestjs/swagger';
import { FastifyRequest } from 'fastify';
import { callsV1, REALTIME_PATH } from '@parley/contracts';
import { GatewayConfig } from '@parley/config';
import { CONFIG } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { ResourceId } from '../http/resource-id';
import { CallTokenDto, CreateRealtimeTokenDto, RealtimeTokenDto } from './call.dto';
import { presentCall } from './call-presenter';
import { CallsClient } from './calls.client';

/**
 * Browser tokens. A browser never holds an API key: the customer's server mints a token here and hands it to one
 * browser, which opens the media plane's realtime socket with it (docs/browser-calls.md).
 */
@ApiTags('Calls')
@ResourceId('call', 'call')
@Controller('v1')
export class RealtimeTokensController {
  constructor(
    private readonly calls: CallsClient,
    @Inject(CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post('realtime/tokens')
  @Operation({
    summary: 'Mint a browser token',
    description:
      'Places a web call (direction `web`, `queued`) to the agent and returns a token to join it from a browser: the embed client ' +
      '(`GET /v1/embed/`) connects with it. The call is answered when the browser connects; a token is redeemable once, within 60 s. ' +
      'At capacity the call is refused before it is recorded: 503 `service_unavailable` with `Retry-After`.',
    permission: 'calls:write',
    idempotent: 'forwarded',
    problems: ['validation_error', 'idempotency_conflict', 'service_unavailable'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateRealtimeTokenDto, @Req() req: FastifyRequest): Promise<RealtimeTokenDto> {
    const key = req.headers['idempotency-key'];
    const request = {
      account_id: who.accountId,
      agent_id: body.agent_id,
      variables: body.variables ?? {},
      metadata: body.metadata ?? {},
      idempotency_key: typeof key === 'string' ? key : '',
    };
    return presentRealtimeToken(this.config, await this.calls.call('createWebCall', (s, md) => s.createWebCall(request, md)));
  }

  @Post('calls/:id/token')
  @Operation({
    summary: 'Join a call from a browser (short-lived call token)',
    description:
      'A token to join the call from a browser, as for `POST /v1/realtime/tokens`. Today: a web call nobody has joined yet (its first token ' +
      'expired unused, say). A call with a browser on it, an ended call, or a phone call (operators and listeners are not supported yet) is 409 `conflict`.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'conflict'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async join(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: CallTokenDto): Promise<RealtimeTokenDto> {
    const request = { account_id: who.accountId, id, role: body.role ?? 'caller' };
    return presentRealtimeToken(this.config, await this.calls.call('mintCallToken', (s, md) => s.mintCallToken(request, md)));
  }
}

/** A minted token as the API answers it: the socket to open with it, and the call it joins. */
export function presentRealtimeToken(config: GatewayConfig, minted: { call?: callsV1.Call; token?: callsV1.RealtimeToken }): RealtimeTokenDto {
  const call = presentCall(minted.call);
  return {
    object: 'realtime_token',
    token: minted.token?.token ?? '',
    url: `${config.MEDIA_PUBLIC_URL.replace(/\/+$/, '')}${REALTIME_PATH}`,
    call_id: call.id,
    role: minted.token?.role ?? 'caller',
    ...(minted.token?.seat ? { seat: minted.token.seat } : {}),
    expires_at: minted.token?.expires_at ?? '',
    call,
  };
}
