import { STREAMS, Subject } from './messaging';
import type { ProjectLimit, SpendPeriod } from './projects';
import type { RecipientState, RetryableOutcome, RunCounts } from './workflows';

/** Every webhook event type of the public interface, with the shape of its `data`. */
export interface WebhookEventData {
  'call.started': { agent_id: string; direction: CallDirection; to: string; from: string };
  'call.ended': { duration_seconds: number; turns: number; end_reason: string };
  'call.failed': { reason: string; message?: string };
  /** `speaker`: who said it when the call's sides are people (a rendezvous seat's name). */
  'call.transcript.updated': { role: 'user' | 'assistant'; text: string; language?: string; speaker?: string };
  'call.transferred': { destination: string };
  'call.recording.ready': { recording_url: string; content_type: string; duration_seconds: number };
  /** `successful`: the call's verdict by its agent's `post_call.success` (null: the agent defines none). */
  'call.analysed': { summary: string | null; extracted: Record<string, unknown>; model: string; successful: boolean | null };
  'call.opt_out': { number: string };
  'call.tool.called': { name: string; kind: string; arguments: Record<string, unknown>; ok: boolean; error?: string };
  /**
   * A rating of the call was recorded (POST /v1/analytics/csat, the agent's keypad survey): `rating` is `score`
   * brought to 1..5 (csatRating), `score` as given on its `scale` (5 or 10).
   */
  'csat.received': { rating_id: string; rating: number; score: number; scale: number; source: string; comment?: string };
  /** A run began dialling (at its start time). */
  'workflow_run.started': { workflow_id: string; run_id: string; counts: RunCounts };
  /** A run is over: every recipient is final (`completed`) or it was cancelled. */
  'workflow_run.completed': { workflow_id: string; run_id: string; status: 'completed' | 'cancelled'; counts: RunCounts };
  /** One recipient of a run reached its final state (the envelope's call_id: its last call, if any). */
  'workflow_run.recipient.finished': {
    workflow_id: string;
    run_id: string;
    recipient_id: string;
    to: string;
    state: Extract<RecipientState, 'succeeded' | 'failed' | 'suppressed' | 'cancelled'>;
    reason?: string;
    attempts: number;
    last_outcome?: RetryableOutcome | 'other';
    metadata: Record<string, string>;
  };
  /**
   * A project first reached one of its ceilings (docs/projects.md): a new call (or agent) was refused with 402
   * `plan_limit_reached` naming `limit`. Sent once until the project is back under that ceiling (for `spend`: once a
   * period). `ceiling`: the count, or for `spend` the amount (exact decimal) in `currency` per `period`.
   */
  'project.limit_reached': { project_id: string; limit: ProjectLimit; ceiling: number | string; currency?: string; period?: SpendPeriod };
}

export type CallDirection = 'outbound' | 'inbound' | 'web';
export type WebhookEventType = keyof WebhookEventData;

export const WEBHOOK_EVENT_TYPES = [
  'call.started',
  'call.ended',
  'call.failed',
  'call.transcript.updated',
  'call.transferred',
  'call.recording.ready',
  'call.analysed',
  'call.opt_out',
  'call.tool.called',
  'csat.received',
  'workflow_run.started',
  'workflow_run.completed',
  'workflow_run.recipient.finished',
  'project.limit_reached',
] as const satisfies readonly WebhookEventType[];

/**
 * The envelope delivered to webhook endpoints; `account_id`, `agent_id`, `project_id` and `workflow` route it and are
 * not delivered.
 */
export interface WebhookEvent<T extends WebhookEventType = WebhookEventType> {
  id: string;
  type: T;
  call_id: string | null;
  created_at: string;
  data: WebhookEventData[T];
  account_id: string;
  agent_id: string | null;
  /**
   * The project the event is about (a call's, a project's own event): endpoints of that project receive it besides
   * those of the account's default project. Absent: only the default project's endpoints (routing only).
   */
  project_id?: string | null;
  /** A call placed by a workflow run: the run and recipient it belongs to (routing only, never delivered). */
  workflow?: { run_id: string; recipient_id: string } | null;
}

/** The subject a webhook event of type `T` is published on (stream PARLEY_WEBHOOK_EVENTS). */
export function webhookEventSubject<T extends WebhookEventType>(type: T): Subject<WebhookEvent<T>> {
  return { name: `parley.events.${type}`, stream: STREAMS.webhookEvents };
}

/**
 * `project.limit_reached` for a refusal at one of a project's ceilings, as every owning service reports it (agents,
 * calls, webhook endpoints); `id` is a new `evt_` id (the caller's: contracts make none).
 */
export function projectLimitReached(id: string, accountId: string, data: WebhookEventData['project.limit_reached']): WebhookEvent<'project.limit_reached'> {
  return { id, type: 'project.limit_reached', call_id: null, created_at: new Date().toISOString(), data, account_id: accountId, agent_id: null, project_id: data.project_id };
}

/** The envelope as customers see it (webhook bodies, call event streams): the routing fields left out. */
export function publicEnvelope(event: WebhookEvent): Omit<WebhookEvent, 'account_id' | 'agent_id' | 'project_id' | 'workflow'> {
  return { id: event.id, type: event.type, call_id: event.call_id, created_at: event.created_at, data: event.data };
}
