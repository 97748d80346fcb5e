import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { collectMetrics, HealthRegistry, metricsRegistry } from '@parley/observability';
import { Public } from '../auth/auth.guard';

@ApiTags('Health')
@Controller()
@Public()
export class OpsController {
  constructor(private readonly health: HealthRegistry) {}

  /** Liveness: the process answers. Never touches a dependency. */
  @Get('healthz')
  @ApiOperation({ summary: 'Liveness probe', description: 'No API key needed; never touches a dependency.' })
  @ApiOkResponse({ description: 'The service is alive.', schema: { properties: { status: { type: 'string', example: 'ok' } } } })
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: the database and the bus answer. */
  @Get('readyz')
  @ApiExcludeEndpoint()
  async readyz(@Res() reply: FastifyReply) {
    const result = await this.health.readiness();
    return reply.status(result.ready ? 200 : 503).send(result);
  }

  @Get('metrics')
  @ApiExcludeEndpoint()
  @Header('content-type', metricsRegistry.contentType)
  metrics() {
    return collectMetrics();
  }
}
