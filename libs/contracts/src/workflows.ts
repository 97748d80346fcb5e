import type { SuccessCriteria } from './success';

/*
 * The workflow model (outbound campaigns): the fields of the public Workflow, run and recipient, defined once. The
 * gateway's DTO classes implement these types; the workflows service stores them; the definition crosses gRPC as
 * JSON (WorkflowSpec) and is read back through readWorkflowSpec, never through casts.
 */

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Call outcomes a retry policy can name (from the call's end reason, see outcomeOfEndReason). */
export const RETRYABLE_OUTCOMES = ['busy', 'no_answer', 'voicemail', 'carrier_error'] as const;
export type RetryableOutcome = (typeof RETRYABLE_OUTCOMES)[number];

/** Where a run is: `scheduled` until its start time, `running`, `paused`, then `completed` or `cancelled`. */
export const RUN_STATUSES = ['scheduled', 'running', 'paused', 'completed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * Where a recipient is. `pending`: waiting for its turn (start time, calling window, a free line); `in_progress`: its
 * call is being placed or is live (or its post-call analysis is awaited); `retrying`: waiting to be called again;
 * then one of the final states.
 */
export const RECIPIENT_STATES = ['pending', 'in_progress', 'retrying', 'succeeded', 'failed', 'suppressed', 'cancelled'] as const;
export type RecipientState = (typeof RECIPIENT_STATES)[number];
export const FINAL_RECIPIENT_STATES: readonly RecipientState[] = ['succeeded', 'failed', 'suppressed', 'cancelled'];

/** Why a recipient was suppressed (never called). */
export const SUPPRESSION_REASONS = ['do_not_call', 'invalid_number', 'duplicate', 'invalid_variables', 'invalid_timezone'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export interface CallingWindow {
  /** Days the recipient may be called, in the recipient's time zone. Default: mon-fri. */
  days?: Weekday[];
  /** Local opening time, `HH:MM` (24 h). Default `09:00`. */
  start?: string;
  /** Local closing time, `HH:MM`, after start. Default `17:00`. No call starts at or after it. */
  end?: string;
  /** Local dates (`YYYY-MM-DD`) on which nobody is called. */
  holidays?: string[];
}

export interface RetryRule {
  /** Further attempts after this outcome (0-10). */
  retries: number;
  /** Seconds between the ending call and the next attempt (60-604800); the calling window still applies. */
  wait_seconds: number;
}

export interface RecipientVariable {
  name: string;
  type?: 'string' | 'number' | 'boolean';
  required?: boolean;
}

/** The writable fields of a workflow (the public WorkflowInput). */
export interface WorkflowSpec {
  name: string;
  description?: string;
  agent_id: string;
  /** Caller id (E.164); default: the deployment's. */
  from?: string;
  /** IANA time zone for recipients that name none. Default `UTC`. */
  timezone?: string;
  calling_window?: CallingWindow;
  /** Calls of one run live at once (1-1000; default 5), within the account's ceiling less MAX_WORKFLOW_RESERVED_CALLS. */
  concurrency?: number;
  retry?: Partial<Record<RetryableOutcome, RetryRule>>;
  recipient_variables?: RecipientVariable[];
  success?: SuccessCriteria;
  metadata?: Record<string, string>;
}

/** One recipient as a run is given it. */
export interface RecipientInput {
  to: string;
  /** IANA time zone; default the workflow's. */
  timezone?: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string>;
}

/** A run's live counters, by recipient state (the gRPC message's type). */
export type { RunCounts } from './gen/parley/workflows/v1/workflows';

/** Reads the JSON that crossed gRPC as a WorkflowSpec (the service validated it when it was stored). */
export function readWorkflowSpec(json: string): WorkflowSpec {
  const spec = JSON.parse(json) as unknown;
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new Error('a workflow spec must be a JSON object');
  return spec as WorkflowSpec;
}

/**
 * The retryable outcome a call's end reason stands for (`shutdown`: the platform stopped mid-call, retried like a
 * carrier failure), or `other` (the call was answered, or cancelled through the API).
 */
export function outcomeOfEndReason(endReason: string): RetryableOutcome | 'other' {
  switch (endReason) {
    case 'busy':
      return 'busy';
    case 'no_answer':
    case 'given_up':
      return 'no_answer';
    case 'voicemail':
      return 'voicemail';
    case 'carrier_error':
    case 'no_media':
    case 'media_lost':
    case 'shutdown':
      return 'carrier_error';
    default:
      return 'other';
  }
}
