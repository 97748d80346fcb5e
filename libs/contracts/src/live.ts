import type { Call } from './gen/parley/calls/v1/calls';
import type { Run as WorkflowRun } from './gen/parley/workflows/v1/workflows';
import type { FlowTransition } from './transcript';
import type { WebhookEvent } from './webhook-events';

/**
 * Live subjects: broadcast without storage to whoever listens at the time (Bus.broadcast / Bus.listen). A
 * listener that misses a message recovers from a snapshot (GetCall), never from the bus.
 */
export interface LiveSubject<P> {
  readonly name: string;
  /** Phantom field carrying the payload type; never set at run time. */
  readonly payload?: P;
}

/** An event a client injected into a live call (POST /v1/calls/{id}/events), for the conversation's flow. */
export interface InjectedCallEvent {
  id: string;
  name: string;
  payload: Record<string, unknown>;
  created_at: string;
}

/**
 * An injected event's payload (or a flow's captured values) as call variables, the same on the call record and in the
 * conversation: nested objects by dotted path (`{"order": {"id": 7}}` → `order.id` = `7`), strings as they are,
 * lists and other values as JSON text; null and undefined fields are left out.
 */
export function eventVariables(payload: Record<string, unknown>, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(payload)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (v && typeof v === 'object' && !Array.isArray(v)) Object.assign(out, eventVariables(v as Record<string, unknown>, path));
    else if (v !== undefined && v !== null) out[path] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}

/**
 * What happens on one call, as it happens: each status change, each customer-facing event, injected events, each
 * move of its conversation flow. For observers (event streams); the media worker takes its commands over gRPC
 * (parley.media.v1), not from here.
 */
export type CallActivity =
  | { kind: 'status'; call: Call }
  | { kind: 'event'; event: WebhookEvent }
  | { kind: 'injected'; call_id: string; injected: InjectedCallEvent }
  | { kind: 'flow'; call_id: string; transition: FlowTransition };

/** How loaded one media worker is, as it reports itself every `report_every_ms` (call admission reads it). */
export interface MediaLoadReport {
  worker_id: string;
  /** Carrier media streams open on the worker now. */
  streams: number;
  /** Streams the worker is sized to carry (MEDIA_WORKER_CAPACITY). */
  capacity: number;
  /** Event-loop utilization (0-1) of the process carrying the audio, over the last interval. */
  event_loop_utilization: number;
  /** Shutting down: it accepts no new streams. */
  draining: boolean;
  /** The worker's report interval; a report older than three intervals means the worker is gone. */
  report_every_ms: number;
}

/**
 * The account's ringing calls, as they change: a claimable call starts ringing (`ringing`, the call as it is), or
 * stops (`gone`: claimed, ended, given up). What `GET /v1/calls/ringing` streams after its snapshot (ListRinging).
 */
export type RingingActivity = { kind: 'ringing'; call: Call } | { kind: 'gone'; call: Call; reason: 'claimed' | 'ended' };

/**
 * One call's media link: the ends of a call whose audio or signalling passes between two sockets, possibly on two
 * media workers (a phone stream and its operator's browser; a rendezvous' two seats). Each end announces itself
 * (`hello`), is answered by the other (`here`), then sends `audio` (16-bit little-endian PCM, base64, at `rate`),
 * `dtmf` (a keypress to play to the other end), `signal` (a rendezvous' opaque signalling) and finally `bye`.
 */
export type MediaLinkMessage =
  | { kind: 'hello' | 'here'; from: string; role: string }
  | { kind: 'audio'; from: string; pcm: string; rate: number }
  | { kind: 'dtmf'; from: string; digit: string }
  | { kind: 'signal'; from: string; data: Record<string, unknown> }
  | { kind: 'bye'; from: string; role: string; reason: string };

/** A workflow run as it changes: its events as they are recorded, and the run (with its counts) after each change. */
export type WorkflowRunActivity = { kind: 'event'; event: WebhookEvent } | { kind: 'run'; run: WorkflowRun };

export const LIVE = {
  /** Everything about one call; the calls service is the only broadcaster. */
  callActivity: (callId: string): LiveSubject<CallActivity> => ({ name: `parley.live.calls.${callId}` }),
  /** Every media worker's load, periodically; media workers broadcast, the calls service's admission listens. */
  mediaLoad: { name: 'parley.live.media.load' } as LiveSubject<MediaLoadReport>,
  /** An account's ringing claimable calls; the calls service broadcasts, gateways (GET /v1/calls/ringing) listen. */
  ringing: (accountId: string): LiveSubject<RingingActivity> => ({ name: `parley.live.ringing.${accountId}` }),
  /** One call's media link between two ends (MediaLinkMessage); media workers both broadcast and listen. */
  mediaLink: (callId: string): LiveSubject<MediaLinkMessage> => ({ name: `parley.live.media.links.${callId}` }),
  /** One workflow run; the workflows service is the only broadcaster, gateways (the run's event stream) listen. */
  workflowRun: (runId: string): LiveSubject<WorkflowRunActivity> => ({ name: `parley.live.workflow_runs.${runId}` }),
} as const;
