import { Body, Controller, Inject, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiTags } from '@nestjs/swagger';
import { FastifyRequest } from 'fastify';
import { callsV1, FieldProblem, REALTIME_PATH } from '@parley/contracts';
import { GatewayConfig } from '@parley/config';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { ConsoleTokenAllowed } from '../auth/auth.guard';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { ResourceId } from '../http/resource-id';
import { CallTokenDto, CreateRealtimeTokenDto, RealtimeTokenDto, RefreshConsoleTokenDto } from './call.dto';
import { presentCall } from './call-presenter';
import { CallsClient } from './calls.client';

/**
 * Browser tokens. A browser never holds an API key: the customer's server mints a token here and hands it to one
 * browser, which opens the media plane's realtime socket with it (docs/browser-calls.md), or, role `console`, to an
 * operator console, which watches the ringing calls and claims them with it (docs/operators.md).
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
      'Role `caller` (the default): places a web call (direction `web`, `queued`) to `agent_id` and returns a token to join it from a browser: the embed client ' +
      '(`GET /v1/embed/`) connects with it. The call is answered when the browser connects (an agent whose `autonomy` is `simple`: it rings then, ' +
      'for a person to claim it, docs/operators.md); a token is redeemable once, within 60 s. ' +
      'At capacity the call is refused before it is recorded: 503 `service_unavailable` with `Retry-After`. ' +
      'Role `console`: an operator console’s token for `operator` (no call: `url`, `call_id` and `call` are null): the console presents it as ' +
      '`Authorization: Bearer rtk_…` on `GET /v1/calls/ringing` and `POST /v1/calls/{id}/claim`, as often as it likes until `expires_at` ' +
      '(`ttl_seconds`, default 900, at most 3600), and refreshes it before then with `POST /v1/realtime/tokens/refresh`, up to `session_expires_at` ' +
      '(12 hours after this mint). It opens no call on the realtime socket and is refused by every other route.',
    project: 'body_agent', permission: 'calls:write',
    idempotent: 'forwarded',
    problems: ['validation_error', 'plan_limit_reached', 'idempotency_conflict', 'service_unavailable'],
  })
  @ApiBody({
    type: CreateRealtimeTokenDto,
    examples: {
      web_call: { summary: 'A web call (role caller)', value: { agent_id: 'agt_…', variables: { name: 'Sam' } } },
      console: { summary: 'An operator console (role console)', value: { role: 'console', operator: 'alice', ttl_seconds: 900 } },
    },
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateRealtimeTokenDto, @Req() req: FastifyRequest): Promise<RealtimeTokenDto> {
    if (body.role === 'console') return this.mintConsole(who, body);
    const misplaced = (['operator', 'ttl_seconds'] as const).filter((f) => body[f] !== undefined);
    const problems: FieldProblem[] = [
      ...(body.agent_id === undefined ? [{ field: 'agent_id', message: 'is required (role caller)' }] : []),
      ...misplaced.map((field) => ({ field, message: 'is for role console only' })),
    ];
    if (problems.length) throw AppError.validation(problems);
    const key = req.headers['idempotency-key'];
    const request = {
      account_id: who.accountId,
      agent_id: body.agent_id ?? '',
      variables: body.variables ?? {},
      metadata: body.metadata ?? {},
      idempotency_key: typeof key === 'string' ? key : '',
    };
    return presentRealtimeToken(this.config, await this.calls.call('createWebCall', (s, md) => s.createWebCall(request, md)));
  }

  @Post('realtime/tokens/refresh')
  @ConsoleTokenAllowed('only')
  @Operation({
    summary: 'Refresh an operator console’s token',
    description:
      'Authenticated by the console token itself (`Authorization: Bearer rtk_…`, role `console`; an API key is 401): answers a new console token ' +
      'for the same operator and session, valid for `ttl_seconds` (default 900, at most 3600) but never past `session_expires_at`. The old token ' +
      'stays valid until its own `expires_at`. Past the session’s end, or with an expired token, 401 `unauthenticated`: the console asks its server for a new one.',
    permission: 'calls:read',
    problems: ['validation_error'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async refresh(@CurrentPrincipal() who: Principal, @Body() body: RefreshConsoleTokenDto, @Req() req: FastifyRequest): Promise<RealtimeTokenDto> {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const request = { account_id: who.accountId, operator: '', ttl_seconds: body.ttl_seconds ?? 0, refresh: token };
    return presentConsoleToken(await this.calls.call('mintConsoleToken', (s, md) => s.mintConsoleToken(request, md)), who.operator ?? '');
  }

  private async mintConsole(who: Principal, body: CreateRealtimeTokenDto): Promise<RealtimeTokenDto> {
    const misplaced = (['agent_id', 'variables', 'metadata'] as const).filter((f) => body[f] !== undefined);
    const problems: FieldProblem[] = [
      ...misplaced.map((field) => ({ field, message: 'is not taken by role console (a console token places no call)' })),
      ...(body.operator === undefined ? [{ field: 'operator', message: 'is required (role console): who holds the console' }] : []),
    ];
    if (problems.length) throw AppError.validation(problems);
    const request = { account_id: who.accountId, operator: body.operator ?? '', ttl_seconds: body.ttl_seconds ?? 0, refresh: '' };
    return presentConsoleToken(await this.calls.call('mintConsoleToken', (s, md) => s.mintConsoleToken(request, md)), body.operator ?? '');
  }

  @Post('calls/:id/token')
  @Operation({
    summary: 'Join a call from a browser (short-lived call token)',
    description:
      'A token to join the call from a browser, as for `POST /v1/realtime/tokens`. Today: a web call nobody has joined yet (its first token ' +
      'expired unused, say). A call with a browser on it, an ended call, or a phone call is 409 `conflict` (an operator joins with the token `POST /v1/calls/{id}/claim` answers; listeners are not supported yet).',
    project: { param: 'id', object: 'call' }, permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'conflict'],
  })
  @ApiCreatedResponse({ type: RealtimeTokenDto })
  async join(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: CallTokenDto): Promise<RealtimeTokenDto> {
    const request = { account_id: who.accountId, id, role: body.role ?? 'caller' };
    return presentRealtimeToken(this.config, await this.calls.call('mintCallToken', (s, md) => s.mintCallToken(request, md)));
  }
}

/** A console token as the API answers it: no call, no socket. */
function presentConsoleToken(minted: callsV1.MintConsoleTokenResponse, operator: string): RealtimeTokenDto {
  return {
    object: 'realtime_token',
    token: minted.token?.token ?? '',
    url: null,
    call_id: null,
    role: 'console',
    operator,
    expires_at: minted.token?.expires_at ?? '',
    session_expires_at: minted.session_expires_at,
    call: null,
  };
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
