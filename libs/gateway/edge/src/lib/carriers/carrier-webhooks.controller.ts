import { Body, Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayConfig } from '@parley/config';
import { CONFIG } from '@parley/runtime';
import { CallsClient } from '../calls/calls.client';
import { Operation } from '../http/operation';

/** Headers worth relaying: carriers sign with one of them; credentials and cookies never leave the gateway. */
const DROPPED = new Set(['authorization', 'cookie', 'proxy-authorization']);

/**
 * Carrier webhooks, outside /v1: `POST /carriers/{carrier}/status` (call progress), `…/amd` (answering-machine
 * verdict), `…/transfer-result` (how a transfer went) and
 * `POST /carriers/{carrier}/voice/{agent_id}` (a call arriving on a number pointed at the agent). They carry no
 * API key: the calls service verifies the carrier's signature over the public URL (PUBLIC_URL + path) and the
 * form fields. Excluded from the OpenAPI document, which describes the customer-facing API.
 */
@ApiExcludeController()
@Controller('carriers')
export class CarrierWebhooksController {
  constructor(
    private readonly calls: CallsClient,
    @Inject(CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post(':carrier/status')
  @HttpCode(204)
  // `call`: the call the callback is about, set by the calls service on the URL it gives the carrier.
  @Operation({ summary: 'Carrier call-progress webhook', permission: 'public', query: ['call'] })
  async status(@Param('carrier') carrier: string, @Req() req: FastifyRequest, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(carrier, 'status', '', req, body, reply);
  }

  @Post(':carrier/amd')
  @HttpCode(204)
  @Operation({ summary: 'Carrier answering-machine verdict webhook', permission: 'public', query: ['call'] })
  async amd(@Param('carrier') carrier: string, @Req() req: FastifyRequest, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(carrier, 'amd', '', req, body, reply);
  }

  @Post(':carrier/transfer-result')
  @Operation({ summary: 'Carrier transfer-result webhook', permission: 'public' })
  async transferResult(@Param('carrier') carrier: string, @Req() req: FastifyRequest, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(carrier, 'transfer-result', '', req, body, reply);
  }

  @Post(':carrier/voice/:agentId')
  @Operation({ summary: 'Carrier inbound-call webhook', permission: 'public' })
  async voice(
    @Param('carrier') carrier: string,
    @Param('agentId') agentId: string,
    @Req() req: FastifyRequest,
    @Body() body: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.relay(carrier, 'voice', agentId, req, body, reply);
  }

  private async relay(carrier: string, kind: string, agentId: string, req: FastifyRequest, body: unknown, reply: FastifyReply): Promise<void> {
    const params = Object.fromEntries(Object.entries((body ?? {}) as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && !DROPPED.has(e[0])),
    );
    const url = `${this.config.PUBLIC_URL.replace(/\/+$/, '')}${req.url}`;
    const res = await this.calls.call('handleCarrierWebhook', (s, md) =>
      s.handleCarrierWebhook({ carrier, kind, url, headers, params, agent_id: agentId }, md),
    );
    if (res.content_type) reply.header('content-type', res.content_type);
    await reply.status(res.status_code).send(res.body || undefined);
  }
}
