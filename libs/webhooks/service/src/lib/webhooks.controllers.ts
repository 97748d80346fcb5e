import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { AgentChanged, STREAMS, SUBJECTS, WebhookEvent, webhooksV1 } from '@parley/contracts';
import { AgentWebhooks } from './agent-webhooks';
import { defaultProjectId, encodePosition, newId } from '@parley/persistence';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveryEngine } from './delivery.engine';
import { pageLimit, pagePosition } from '@parley/rpc';
import { EndpointProject, EndpointsDomain, fieldsOf } from './endpoints.domain';
import { EndpointEntity } from './entities';

const { WebhooksServiceControllerMethods } = webhooksV1;

function toEndpoint(e: EndpointEntity): webhooksV1.Endpoint {
  return {
    id: e.id,
    account_id: e.accountId,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    metadata: e.metadata,
    disabled_reason: e.disabledReason ?? '',
    consecutive_failures: e.consecutiveFailures,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
    project_id: e.projectId ?? defaultProjectId(e.accountId),
  };
}

const projectOf = (req: { account_id: string; project_id: string; max_webhook_endpoints: number }): EndpointProject => ({
  id: req.project_id || defaultProjectId(req.account_id),
  maxEndpoints: Math.max(0, req.max_webhook_endpoints),
});

const iso = (d: Date | null) => (d ? d.toISOString() : '');

/** Every customer-facing event of the bus (stream PARLEY_WEBHOOK_EVENTS) enters delivery here. */
@Controller()
export class WebhookEventsConsumer {
  constructor(
    private readonly engine: DeliveryEngine,
    private readonly agentWebhooks: AgentWebhooks,
  ) {}

  // Events carry no order promise (the interface says so), so this replica takes many at once: they share the
  // engine's endpoint lookups and inserts. One that keeps failing is parked by the bus transport (BusServer), and
  // a replay never duplicates a delivery: fan-out is idempotent on the event id.
  @EventPattern(STREAMS.webhookEvents.subjects[0], { concurrency: 128 })
  async onEvent(@Payload() event: WebhookEvent): Promise<void> {
    await this.engine.accept(event);
  }

  /** An agent's webhook_url may have changed: look it up afresh next time. */
  @EventPattern(SUBJECTS.agentUpdated.name)
  onAgentUpdated(@Payload() change: AgentChanged): void {
    this.agentWebhooks.forget(change.account_id, change.agent_id);
  }

  @EventPattern(SUBJECTS.agentDeleted.name)
  onAgentDeleted(@Payload() change: AgentChanged): void {
    this.agentWebhooks.forget(change.account_id, change.agent_id);
  }
}

@Controller()
@WebhooksServiceControllerMethods()
export class WebhooksGrpcController implements webhooksV1.WebhooksServiceController {
  constructor(
    private readonly endpoints: EndpointsDomain,
    private readonly engine: DeliveryEngine,
    private readonly deliveries: DeliveriesRepository,
  ) {}

  async createEndpoint(req: webhooksV1.CreateEndpointRequest): Promise<webhooksV1.CreateEndpointResponse> {
    const { endpoint, secret } = await this.endpoints.create(req.account_id, fieldsOf(req.endpoint), projectOf(req));
    return { endpoint: toEndpoint(endpoint), secret };
  }

  async declareEndpoint(req: webhooksV1.DeclareEndpointRequest): Promise<webhooksV1.DeclareEndpointResponse> {
    const { endpoint, created, secret } = await this.endpoints.declare(req.account_id, fieldsOf(req.endpoint), projectOf(req));
    if (!endpoint.enabled) await this.engine.abandonCancelled();
    return { endpoint: toEndpoint(endpoint), created, secret: secret ?? '' };
  }

  async getEndpoint(req: webhooksV1.GetEndpointRequest): Promise<webhooksV1.GetEndpointResponse> {
    return { endpoint: toEndpoint(await this.endpoints.get(req.account_id, req.id)) };
  }

  async updateEndpoint(req: webhooksV1.UpdateEndpointRequest): Promise<webhooksV1.UpdateEndpointResponse> {
    const endpoint = await this.endpoints.update(req.account_id, req.id, fieldsOf(req.patch));
    // Disabled: this replica abandons its attempts to it at once (others at their next pass). Enabled: work may be due.
    if (!endpoint.enabled) await this.engine.abandonCancelled();
    else this.engine.nudge();
    return { endpoint: toEndpoint(endpoint) };
  }

  async deleteEndpoint(req: webhooksV1.DeleteEndpointRequest): Promise<webhooksV1.DeleteEndpointResponse> {
    await this.endpoints.delete(req.account_id, req.id);
    // This replica abandons its attempts to the endpoint at once; others at their next pass.
    await this.engine.abandonCancelled();
    return { id: req.id, deleted: true };
  }

  async listEndpoints(req: webhooksV1.ListEndpointsRequest): Promise<webhooksV1.ListEndpointsResponse> {
    const page = await this.endpoints.list(req.account_id, pageLimit(req.limit), req.after, req.project_id || undefined);
    return { data: page.items.map(toEndpoint), has_more: page.hasMore, next: page.next };
  }

  async rotateSecret(req: webhooksV1.RotateSecretRequest): Promise<webhooksV1.RotateSecretResponse> {
    const { endpoint, secret, previousExpiresAt } = await this.endpoints.rotateSecret(req.account_id, req.id, req.overlap_seconds);
    return { endpoint: toEndpoint(endpoint), secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
  }

  /**
   * The endpoint's history, newest first: every attempt (succeeded, failed, or aborted when the endpoint was
   * disabled or deleted while it was in flight) and every delivery that ended without one — cancelled (pending
   * when the endpoint was disabled or deleted) or skipped (its event occurred while the endpoint was disabled).
   * A deleted endpoint's history stays readable.
   */
  async listDeliveries(req: webhooksV1.ListDeliveriesRequest): Promise<webhooksV1.ListDeliveriesResponse> {
    await this.endpoints.get(req.account_id, req.id, undefined, true);
    const limit = pageLimit(req.limit);
    const after = pagePosition(req.after);
    const rows = await this.deliveries.history(req.id, limit + 1, after);
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    const hasMore = rows.length > limit;
    return {
      data: items.map((r) => ({
        id: r.id,
        event_id: r.eventId,
        event_type: r.eventType,
        attempt: r.attempt,
        status_code: r.statusCode,
        error: r.error,
        duration_ms: r.durationMs,
        succeeded: r.succeeded,
        created_at: iso(r.createdAt),
        next_attempt_at: iso(r.nextAttemptAt),
        test: r.test,
        outcome: r.outcome,
      })),
      has_more: hasMore,
      next: hasMore && last ? encodePosition({ createdAt: last.createdAt, id: last.id }) : '',
    };
  }

  async testEndpoint(req: webhooksV1.TestEndpointRequest): Promise<webhooksV1.TestEndpointResponse> {
    const endpoint = await this.endpoints.get(req.account_id, req.id);
    const id = newId('evt');
    const body = JSON.stringify({
      id,
      type: 'webhook_endpoint.test',
      call_id: null,
      created_at: new Date().toISOString(),
      data: { endpoint_id: endpoint.id, message: 'A test delivery from Parley.' },
    });
    const result = await this.engine.sendTest(endpoint, body, id, 'webhook_endpoint.test');
    return { delivered: result.delivered, response_code: result.status, error: result.error ?? '' };
  }

  async checkEndpointUrl(req: webhooksV1.CheckEndpointUrlRequest): Promise<webhooksV1.CheckEndpointUrlResponse> {
    return { problem: (await this.endpoints.urlProblem(req.url)) ?? '' };
  }
}
