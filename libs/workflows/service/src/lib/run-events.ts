import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { LIVE, WebhookEvent, WebhookEventData, WebhookEventType, WorkflowRunActivity } from '@parley/contracts';
import { Bus, OutboxRelay } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { newId } from '@parley/persistence';
import { BUS } from '@parley/runtime';
import { workflowMetrics } from './metrics';
import { toRunMessage } from './presenters';
import { PUBLIC_STATE, RecipientRecord, RunRecord, WorkflowsRepository } from './workflows.repository';

export const WORKFLOWS_OUTBOX = Symbol('WORKFLOWS_OUTBOX');

type RunEventType = Extract<WebhookEventType, `workflow_run.${string}`>;

/** What a recipient's final event tells. */
export type FinishedRecipient = Pick<RecipientRecord, 'id' | 'to' | 'state' | 'reason' | 'attempt' | 'lastOutcome' | 'metadata' | 'callIds'>;

/** Events written inside a transaction; published (outbox nudge, live broadcast) once it committed. */
export class PendingEvents {
  readonly events: WebhookEvent[] = [];
  /** Runs where a recipient became final: each is completed after the commit if that was its last one. */
  readonly finishedRuns = new Set<string>();
}

/**
 * A run's events: recorded in the workflows outbox in the transaction that made the change (so a webhook is sent
 * if and only if the change committed), then broadcast on the run's live subject for its event stream.
 */
@Injectable()
export class RunEvents {
  private readonly log = serviceLogger('workflow-events');

  constructor(
    private readonly repository: WorkflowsRepository,
    @Inject(WORKFLOWS_OUTBOX) private readonly relay: OutboxRelay,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  async record<T extends RunEventType>(
    m: EntityManager,
    pending: PendingEvents,
    run: Pick<RunRecord, 'id' | 'accountId'>,
    agentId: string,
    type: T,
    data: WebhookEventData[T],
    at: Date,
    callId: string | null = null,
  ): Promise<void> {
    const event = { id: newId('evt'), type, call_id: callId, created_at: at.toISOString(), data, account_id: run.accountId, agent_id: agentId } as WebhookEvent;
    await this.repository.enqueue(m, event);
    pending.events.push(event);
  }

  /** `workflow_run.recipient.finished` for a recipient that reached a final state. */
  recipientFinished(m: EntityManager, pending: PendingEvents, run: RunRecord, agentId: string, r: FinishedRecipient, at: Date): Promise<void> {
    const state = PUBLIC_STATE[r.state];
    if (state !== 'succeeded' && state !== 'failed' && state !== 'suppressed' && state !== 'cancelled') throw new Error(`recipient ${r.id} is not final (${r.state})`);
    return this.record(
      m,
      pending,
      run,
      agentId,
      'workflow_run.recipient.finished',
      {
        workflow_id: run.workflowId,
        run_id: run.id,
        recipient_id: r.id,
        to: r.to,
        state,
        ...(r.reason ? { reason: r.reason } : {}),
        attempts: r.attempt,
        ...(r.lastOutcome ? { last_outcome: r.lastOutcome as WebhookEventData['workflow_run.recipient.finished']['last_outcome'] } : {}),
        metadata: r.metadata,
      },
      at,
      r.callIds.at(-1) ?? null,
    );
  }

  /** After the commit: relay the outbox now and tell the run's event streams. */
  published(pending: PendingEvents): void {
    if (!pending.events.length) return;
    this.relay.nudge();
    for (const event of pending.events) {
      const runId = (event.data as { run_id: string }).run_id;
      this.broadcast(runId, { kind: 'event', event });
      // Counted once committed, whichever path made the recipient final.
      if (event.type === 'workflow_run.recipient.finished') workflowMetrics.recipientsFinished.inc({ state: (event.data as { state: string }).state });
    }
  }

  /** The run as it now is (status, counts), to its event streams: after its status changed, and after its events. */
  async runChanged(runId: string): Promise<void> {
    const run = await this.repository.getRunById(this.repository.db.manager, runId);
    if (!run) return;
    this.broadcast(runId, { kind: 'run', run: toRunMessage(run, await this.repository.countsOf(this.repository.db.manager, runId)) });
  }

  private broadcast(runId: string, activity: WorkflowRunActivity): void {
    this.bus.broadcast(LIVE.workflowRun(runId).name, activity).catch((e) => this.log.warn({ err: e, runId }, 'live broadcast failed'));
  }
}
