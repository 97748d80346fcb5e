import { readWorkflowSpec, workflowsV1 } from '@parley/contracts';
import { RecipientDto, RunCountsDto, RunDto, RunPageDto, WorkflowDto } from './workflow.dto';

/** The public workflow: its id, then the definition as the service stored it (defaults filled in), then its times. */
export function presentWorkflow(w: workflowsV1.Workflow | undefined): WorkflowDto {
  if (!w) throw new Error('workflows service answered without a workflow');
  const spec = readWorkflowSpec(w.spec_json);
  const out = { id: w.id, object: 'workflow', ...spec, created_at: w.created_at, updated_at: w.updated_at } as WorkflowDto;
  // The definition never names these; if it did, the record's own win.
  out.id = w.id;
  out.object = 'workflow';
  return out;
}

function presentCounts(c: workflowsV1.RunCounts | undefined): RunCountsDto {
  return {
    total: Number(c?.total ?? 0),
    pending: Number(c?.pending ?? 0),
    in_progress: Number(c?.in_progress ?? 0),
    retrying: Number(c?.retrying ?? 0),
    succeeded: Number(c?.succeeded ?? 0),
    failed: Number(c?.failed ?? 0),
    suppressed: Number(c?.suppressed ?? 0),
    cancelled: Number(c?.cancelled ?? 0),
  };
}

export function presentRun(r: workflowsV1.Run | undefined): RunDto {
  if (!r) throw new Error('workflows service answered without a run');
  return {
    id: r.id,
    object: 'workflow_run',
    workflow_id: r.workflow_id,
    status: r.status,
    start_at: r.start_at,
    started_at: r.started_at || null,
    completed_at: r.completed_at || null,
    recipients_complete: r.recipients_complete,
    counts: presentCounts(r.counts),
    metadata: r.metadata ?? {},
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The run after a request that added recipients, with what that request did with them. */
export function presentRunPage(res: { run?: workflowsV1.Run; page?: workflowsV1.PageOutcome }): RunPageDto {
  return { ...presentRun(res.run), page: { added: Number(res.page?.added ?? 0), suppressed: Number(res.page?.suppressed ?? 0) } };
}

export function presentRecipient(r: workflowsV1.Recipient): RecipientDto {
  return {
    id: r.id,
    object: 'workflow_recipient',
    run_id: r.run_id,
    to: r.to,
    timezone: r.timezone,
    variables: r.variables ?? {},
    metadata: r.metadata ?? {},
    state: r.state,
    attempts: Number(r.attempts),
    last_outcome: r.last_outcome || null,
    reason: r.reason || null,
    call_ids: r.call_ids ?? [],
    next_attempt_at: r.next_attempt_at || null,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
