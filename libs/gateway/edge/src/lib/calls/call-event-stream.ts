import { FastifyReply, FastifyRequest } from 'fastify';
import { CallActivity, callsV1, LIVE, publicEnvelope } from '@parley/contracts';
import { Bus } from '@parley/messaging';
import { presentCall, presentFlowTransition } from './call-presenter';
import { listenThenRead, openEventStream } from './event-stream';
/** Statuses only move forward; a broadcast that arrives after a newer snapshot is stale and skipped. */
const RANK: Record<string, number> = { queued: 0, ringing: 1, in_progress: 2, ended: 3, failed: 3 };

/**
 * `GET /v1/calls/{id}/events` as Server-Sent Events. Listening starts before the snapshot is read, so nothing
 * that happens in between is lost; the first message is the call as it is (`call.status`), then every status
 * change (`call.status`), customer-facing event (`call.started`, `call.transcript.updated`, … with the webhook
 * envelope as data), injected event (`call.event`) and move of the conversation flow (`call.flow.transitioned`, the
 * flow_transition as data; not a webhook event). The stream ends after the call's final status.
 */
export async function streamCallEvents(
  bus: Bus,
  callId: string,
  snapshot: () => Promise<callsV1.Call | undefined>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const live = await listenThenRead(bus, LIVE.callActivity(callId), async () => {
    const found = await snapshot();
    if (!found) throw new Error('calls service answered without a call');
    return found;
  });
  const call = live.snapshot;

  const { send, finish } = openEventStream(request, reply, live.stopListening);
  let rank = -1;
  const status = (c: callsV1.Call) => {
    if ((RANK[c.status] ?? 0) <= rank) return;
    rank = RANK[c.status] ?? 0;
    send('call.status', `${c.id}:${c.status}`, presentCall(c));
    if (rank === RANK['ended']) finish();
  };

  const deliver = (activity: CallActivity) => {
    if (activity.kind === 'status') return status(activity.call);
    if (activity.kind === 'event') return send(activity.event.type, activity.event.id, publicEnvelope(activity.event));
    if (activity.kind === 'injected') return send('call.event', activity.injected.id, { object: 'call_event', call_id: activity.call_id, ...activity.injected });
    if (activity.kind === 'flow') {
      const t = activity.transition;
      send('call.flow.transitioned', `${activity.call_id}:flow:${t.at_ms}:${t.edge_index}:${t.to}`, presentFlowTransition(activity.call_id, t));
    }
  };
  // Events heard before the snapshot are sent first; their status changes are already in the snapshot.
  for (const activity of live.early.splice(0)) if (activity.kind !== 'status') deliver(activity);
  status(call);
  live.follow(deliver);
}
