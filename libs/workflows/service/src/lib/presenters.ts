import { workflowsV1 } from '@parley/contracts';
import { PUBLIC_STATE, RecipientRecord, RunRecord, WorkflowRecord } from './workflows.repository';

const iso = (d: Date | null) => (d ? d.toISOString() : '');

export function toWorkflowMessage(w: WorkflowRecord): workflowsV1.Workflow {
  return { id: w.id, account_id: w.accountId, spec_json: JSON.stringify(w.spec), created_at: iso(w.createdAt), updated_at: iso(w.updatedAt) };
}

export function toRunMessage(r: RunRecord, counts: workflowsV1.RunCounts): workflowsV1.Run {
  return {
    id: r.id,
    workflow_id: r.workflowId,
    status: r.status,
    start_at: iso(r.startAt),
    started_at: iso(r.startedAt),
    completed_at: iso(r.completedAt),
    recipients_complete: r.recipientsComplete,
    counts,
    metadata: r.metadata,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}

export function toRecipientMessage(r: RecipientRecord): workflowsV1.Recipient {
  const state = PUBLIC_STATE[r.state];
  return {
    id: r.id,
    run_id: r.runId,
    to: r.to,
    timezone: r.timezone,
    variables: r.variables,
    metadata: r.metadata,
    state,
    attempts: r.attempt,
    last_outcome: r.lastOutcome ?? '',
    reason: r.reason ?? '',
    call_ids: r.callIds,
    next_attempt_at: state === 'pending' || state === 'retrying' ? iso(r.dueAt) : '',
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}
