import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiQuery, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { webhooksV1 } from '@parley/contracts';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { NoBody } from '../http/no-body';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import {
  CreatedWebhookEndpointDto,
  DeletedWebhookEndpointDto,
  ROTATION_OVERLAP_DEFAULT,
  RotatedSecretDto,
  RotateSecretInputDto,
  WEBHOOK_ENDPOINT_DEFAULTS,
  WebhookDeliveryDto,
  WebhookDeliveryListDto,
  WebhookDeliveryOutcome,
  WebhookEndpointDto,
  WebhookEndpointInputDto,
  WebhookEndpointListDto,
  WebhookEndpointPatchDto,
  WebhookTestResultDto,
} from './webhook-endpoint.dto';
import { WebhookUrlProblemsInterceptor } from './url-problems.interceptor';
import { WebhooksClient } from './webhooks.client';
import { ResourceId } from '../http/resource-id';
import { callListFilter } from '../calls/calls.controller';
import { ProjectRecord } from '../projects/projects.repository';
import { noSuchProject, ProjectsService } from '../projects/projects.service';

/** The public endpoint: never the secret, nor the account or the failure counter. */
export function presentEndpoint(e: webhooksV1.Endpoint | undefined): WebhookEndpointDto {
  if (!e) throw new Error('webhooks service answered without an endpoint');
  return {
    id: e.id,
    object: 'webhook_endpoint',
    project_id: e.project_id,
    url: e.url,
    events: e.events ?? [],
    description: e.description ?? '',
    enabled: e.enabled,
    metadata: e.metadata ?? {},
    disabled_reason: e.disabled_reason || null,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

export function presentDelivery(d: webhooksV1.Delivery): WebhookDeliveryDto {
  return {
    id: d.id,
    object: 'webhook_delivery',
    event_id: d.event_id,
    event_type: d.event_type,
    attempt: d.attempt,
    status_code: d.status_code || null,
    error: d.error || null,
    duration_ms: d.duration_ms,
    succeeded: d.succeeded,
    created_at: d.created_at,
    next_attempt_at: d.next_attempt_at || null,
    test: d.test,
    outcome: d.outcome as WebhookDeliveryOutcome,
  };
}

export function presentTestResult(r: webhooksV1.TestEndpointResponse): WebhookTestResultDto {
  if (r.delivered) return { delivered: true, response_code: r.response_code };
  const error = r.error || (r.response_code ? `the endpoint answered ${r.response_code}` : 'no response from the endpoint');
  return { delivered: false, response_code: r.response_code, error };
}

/** The gRPC input: only the fields given (on update, absent = keep), lists and maps wrapped to carry presence. */
export function toEndpointInput(body: Partial<WebhookEndpointInputDto>): webhooksV1.EndpointInput {
  return {
    ...(body.url !== undefined ? { url: body.url } : {}),
    ...(body.events !== undefined ? { events: { items: body.events } } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
    ...(body.metadata !== undefined ? { metadata: { entries: body.metadata } } : {}),
  };
}

/** A whole endpoint state: the fields given, every other one at its default. */
function withDefaults(body: WebhookEndpointInputDto): WebhookEndpointInputDto {
  return {
    url: body.url,
    events: body.events ?? [...WEBHOOK_ENDPOINT_DEFAULTS.events],
    description: body.description ?? WEBHOOK_ENDPOINT_DEFAULTS.description,
    enabled: body.enabled ?? WEBHOOK_ENDPOINT_DEFAULTS.enabled,
    metadata: body.metadata ?? { ...WEBHOOK_ENDPOINT_DEFAULTS.metadata },
  };
}

const deliveriesList = (endpointId: string) => `webhook_deliveries:${endpointId}`;

const inProject = (project: ProjectRecord) => ({ project_id: project.id, max_webhook_endpoints: project.max_webhook_endpoints ?? 0 });

@ApiTags('Webhooks')
@ResourceId('whep', 'webhook endpoint')
@Controller('v1/webhook_endpoints')
export class WebhookEndpointsController {
  constructor(
    private readonly webhooks: WebhooksClient,
    private readonly cursors: CursorCodec,
    private readonly projects: ProjectsService,
  ) {}

  @Get()
  @Operation({ summary: 'List webhook endpoints, newest first (secrets redacted)', project: 'list', permission: 'agents:read', list: true, query: ['project_id'] })
  @ApiQuery({
    name: 'project_id',
    required: false,
    description: 'Only the endpoints of this project. A value that is not a project id (`prj_…`) is refused with 400 `invalid_request`.',
    schema: { type: 'string', pattern: '^prj_[0-9A-Za-z]{22}$' },
  })
  @ApiOkResponse({ type: WebhookEndpointListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<WebhookEndpointDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('webhook_endpoints', who.accountId, c));
    const project = callListFilter(query, 'project_id');
    const page = await this.webhooks.call('listEndpoints', (s, md) => s.listEndpoints({ account_id: who.accountId, limit, after, project_id: project }, md));
    return {
      object: 'list',
      data: page.data.map(presentEndpoint),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('webhook_endpoints', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @UseInterceptors(WebhookUrlProblemsInterceptor)
  @Operation({
    summary: 'Create a webhook endpoint',
    description:
      'Always creates a new endpoint, also when the account has others with the same URL (for example with other ' +
      '`events`). Returns it with its signing `secret` (whsec_…), which is shown only in this response.',
    project: 'body_project', permission: 'agents:write',
    idempotent: true,
    problems: ['validation_error', 'plan_limit_reached', 'payload_too_large', 'unsupported_media_type', 'idempotency_conflict'],
  })
  @ApiCreatedResponse({ type: CreatedWebhookEndpointDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: WebhookEndpointInputDto): Promise<CreatedWebhookEndpointDto> {
    // Created under the project's share lock, as agents are: its ceiling holds still, it cannot be deleted meanwhile.
    const res = await this.projects.within(who.accountId, body.project_id, noSuchProject('project_id'), (project) =>
      this.webhooks.call('createEndpoint', (s, md) =>
        s.createEndpoint({ account_id: who.accountId, endpoint: toEndpointInput(withDefaults(body)), ...inProject(project) }, md),
      ),
    );
    return { ...presentEndpoint(res.endpoint), secret: res.secret };
  }

  @Put()
  @UseInterceptors(WebhookUrlProblemsInterceptor)
  @Operation({
    summary: 'Declare a webhook endpoint by URL',
    description:
      'Declares the endpoint with this URL: creates it when the account has none (201, with its secret), otherwise ' +
      'sets it to exactly the given state (200; omitted fields return to their defaults). Safe to repeat. Re-declaring ' +
      'never resets the failure count and never lifts an automatic disable (PATCH `enabled: true` does). When several ' +
      'endpoints of the account share the URL (created with POST), which one is meant is ambiguous: 409 `conflict`, ' +
      'whose `endpoint_ids` lists them; update the one you mean with PATCH.',
    permission: 'agents:write',
    problems: ['validation_error', 'conflict', 'plan_limit_reached', 'payload_too_large', 'unsupported_media_type'],
  })
  @ApiCreatedResponse({ type: CreatedWebhookEndpointDto, description: 'Created; carries the signing `secret`, shown only here.' })
  @ApiOkResponse({ type: WebhookEndpointDto, description: 'An endpoint with this URL existed and now has exactly the given state.' })
  async declare(
    @CurrentPrincipal() who: Principal,
    @Body() body: WebhookEndpointInputDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<WebhookEndpointDto | CreatedWebhookEndpointDto> {
    const res = await this.projects.within(who.accountId, body.project_id, noSuchProject('project_id'), (project) =>
      this.webhooks.call('declareEndpoint', (s, md) =>
        s.declareEndpoint({ account_id: who.accountId, endpoint: toEndpointInput(withDefaults(body)), ...inProject(project) }, md),
      ),
    );
    const endpoint = presentEndpoint(res.endpoint);
    if (!res.created) return endpoint;
    reply.status(201);
    return { ...endpoint, secret: res.secret };
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a webhook endpoint (secret redacted)', project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: WebhookEndpointDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<WebhookEndpointDto> {
    const res = await this.webhooks.call('getEndpoint', (s, md) => s.getEndpoint({ account_id: who.accountId, id }, md));
    return presentEndpoint(res.endpoint);
  }

  @Patch(':id')
  @UseInterceptors(WebhookUrlProblemsInterceptor)
  @Operation({
    summary: 'Update a webhook endpoint: scalars merge, `events` and `metadata` are replaced whole',
    description:
      '`enabled: false` stops deliveries and keeps the secret: pending deliveries are cancelled, attempts in flight abandoned, ' +
      'and events that occur meanwhile are recorded as skipped. `enabled: true` (also after an automatic disable) resets the ' +
      'failure count; only events from then on are delivered.',
    project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:write',
    problems: ['not_found', 'validation_error', 'payload_too_large', 'unsupported_media_type'],
  })
  @ApiOkResponse({ type: WebhookEndpointDto })
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: WebhookEndpointPatchDto): Promise<WebhookEndpointDto> {
    const res = await this.webhooks.call('updateEndpoint', (s, md) =>
      s.updateEndpoint({ account_id: who.accountId, id, patch: toEndpointInput(body) }, md),
    );
    return presentEndpoint(res.endpoint);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete a webhook endpoint',
    description: 'Deliveries to it stop at once (pending ones cancelled, attempts in flight abandoned); its delivery history stays readable.',
    project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:write',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: DeletedWebhookEndpointDto })
  @NoBody()
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedWebhookEndpointDto> {
    const res = await this.webhooks.call('deleteEndpoint', (s, md) => s.deleteEndpoint({ account_id: who.accountId, id }, md));
    return { id: res.id || id, object: 'webhook_endpoint', deleted: true };
  }

  @Get(':id/deliveries')
  @Operation({
    summary: 'Delivery attempts of an endpoint, newest first',
    description:
      'One entry per attempt, with the status received, the error and when the next attempt is due, and one per delivery ' +
      'that ended without an attempt (`outcome` cancelled or skipped). Test deliveries (POST …/test) are listed too, with ' +
      '`test: true`. Readable after the endpoint was deleted.',
    project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:read',
    list: true,
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: WebhookDeliveryListDto })
  async deliveries(
    @CurrentPrincipal() who: Principal,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ListEnvelope<WebhookDeliveryDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode(deliveriesList(id), who.accountId, c));
    const page = await this.webhooks.call('listDeliveries', (s, md) =>
      s.listDeliveries({ account_id: who.accountId, id, limit, after }, md),
    );
    return {
      object: 'list',
      data: page.data.map(presentDelivery),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode(deliveriesList(id), who.accountId, page.next) } : {}),
    };
  }

  @Post(':id/test')
  @HttpCode(200)
  @Operation({
    summary: 'Send a synthetic delivery',
    description:
      'No body. Sends one signed delivery now, also to a disabled endpoint, and reports the outcome: `delivered` on a 2xx ' +
      'answer, `response_code` (0 when no response arrived) and, on failure, `error`. Never retried; recorded in the ' +
      'delivery history with `test: true`; neither counts towards automatic disabling nor resets the failure count.',
    project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:write',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: WebhookTestResultDto })
  @NoBody()
  async test(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<WebhookTestResultDto> {
    const res = await this.webhooks.call('testEndpoint', (s, md) => s.testEndpoint({ account_id: who.accountId, id }, md));
    return presentTestResult(res);
  }

  @Post(':id/rotate_secret')
  @HttpCode(200)
  @Operation({
    summary: 'Rotate the signing secret',
    description:
      'Returns a new secret (shown only here). The current one keeps signing beside it for `overlap_seconds` ' +
      `(default ${ROTATION_OVERLAP_DEFAULT}): during the overlap every delivery carries one v1= signature per active secret, ` +
      'so receivers can switch over without missing a delivery. The body is optional.',
    project: { param: 'id', object: 'webhook endpoint' }, permission: 'agents:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'idempotency_conflict'],
  })
  @ApiBody({ type: RotateSecretInputDto, required: false })
  @ApiOkResponse({ type: RotatedSecretDto })
  async rotateSecret(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: RotateSecretInputDto): Promise<RotatedSecretDto> {
    const overlap = body?.overlap_seconds ?? ROTATION_OVERLAP_DEFAULT;
    const res = await this.webhooks.call('rotateSecret', (s, md) =>
      s.rotateSecret({ account_id: who.accountId, id, overlap_seconds: overlap }, md),
    );
    return {
      object: 'webhook_endpoint_secret',
      endpoint_id: res.endpoint?.id || id,
      secret: res.secret,
      previous_secret_expires_at: res.previous_secret_expires_at,
    };
  }
}
