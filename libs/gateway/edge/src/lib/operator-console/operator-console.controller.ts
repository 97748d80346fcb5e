import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { Public } from '../auth/auth.guard';
import { OPERATOR_CONSOLE_CSP, OPERATOR_CONSOLE_PAGE } from './operator-console-page';

/**
 * The operator console page (`GET /operator`, docs/operators.md). Always served, public: the page is the same for
 * everyone and holds nothing; every call it makes needs the console token its person brings. Excluded from the
 * OpenAPI document, which describes the API.
 */
@ApiExcludeController()
@Controller()
@Public()
export class OperatorConsoleController {
  @Get('operator')
  async page(@Res() reply: FastifyReply): Promise<void> {
    await reply
      .status(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', OPERATOR_CONSOLE_CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('permissions-policy', 'microphone=(self)')
      .send(OPERATOR_CONSOLE_PAGE);
  }
}
