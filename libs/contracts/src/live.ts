import type { Call } from './gen/parley/calls/v1/calls';
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

/** An event a client injected into a live call (POST /v1/calls/{id}/events), for the conversation to act on. */
export interface InjectedCallEvent {
  id: string;
  name: string;
  payload: Record<string, unknown>;
  created_at: string;
}

/** What happens on one call, as it happens: each status change, each customer-facing event, injected events. */
export type CallActivity =
  | { kind: 'status'; call: Call }
  | { kind: 'event'; event: WebhookEvent }
  | { kind: 'injected'; call_id: string; injected: InjectedCallEvent }
  /** An answering machine picked up and the agent leaves `message` (its voicemail is `message`). */
  | { kind: 'voicemail'; call_id: string; message: string };

export const LIVE = {
  /** Everything about one call; the calls service is the only broadcaster. */
  callActivity: (callId: string): LiveSubject<CallActivity> => ({ name: `parley.live.calls.${callId}` }),
} as const;
