import { Body, Controller, Get, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';
import { DevSwitch } from '@parley/carrier-dev';
import { AppError } from '@parley/rpc';
import { Public } from '../auth/auth.guard';

export const DEV_SWITCH = Symbol('DEV_SWITCH');

/**
 * The dev carrier's HTTP side, outside /v1: the dev phone page (`GET /dev/phone`) and the switch's REST API that the
 * calls service's DevCarrier drives (`/dev/switch/calls…`, its own bearer key, checked by the switch). What they do
 * lives in @parley/carrier-dev; this only hands requests over. Every path is 404 while DEV_CARRIER is off.
 * Excluded from the OpenAPI document, which describes the customer-facing API.
 */
@ApiExcludeController()
@Controller('dev')
@Public()
export class DevPhoneController {
  constructor(@Inject(DEV_SWITCH) private readonly devSwitch: DevSwitch | null) {}

  @Get('phone')
  async page(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(req, undefined, reply);
  }

  @Post('switch/calls')
  async place(@Req() req: FastifyRequest, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(req, body, reply);
  }

  @Get('switch/calls/:call')
  async fetch(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(req, undefined, reply);
  }

  @Post('switch/calls/:call/:action')
  async act(@Req() req: FastifyRequest, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    await this.relay(req, body, reply);
  }

  private async relay(req: FastifyRequest, body: unknown, reply: FastifyReply): Promise<void> {
    if (!this.devSwitch) throw new AppError('not_found', 'The dev phone is off on this deployment (see DEV_CARRIER).');
    const answer = await this.devSwitch.handleHttp({ method: req.method, url: req.url, headers: req.headers, body });
    await reply.status(answer.status).header('content-type', answer.contentType).header('cache-control', 'no-store').send(answer.body);
  }
}
