import { FastifyReply, FastifyRequest } from 'fastify';
import { callsV1, LIVE, RingingActivity } from '@parley/contracts';
import { Bus } from '@parley/messaging';
import { presentCall } from './call-presenter';
import { openEventStream } from './event-stream';

/**
 * `GET /v1/calls/ringing` as Server-Sent Events. Listening starts before the snapshot (ListRinging) is read, so no
 * arrival or departure in between is lost: first a `ringing` event per call ringing now, then `ringing` for each
 * arrival and `gone` (`{ call_id, reason, call }`) for each departure. Each call is announced once and gone once:
 * the bus may repeat a broadcast (a stream re-attached) or deliver one the snapshot already shows, and a call gone
 * before it was announced is never announced. With `closeAt` (a console token's session end) the stream sends
 * `session-expired` and closes then.
 */
export async function streamRinging(
  bus: Bus,
  accountId: string,
  snapshot: () => Promise<callsV1.Call[]>,
  request: FastifyRequest,
  reply: FastifyReply,
  closeAt?: Date,
): Promise<void> {
  const early: RingingActivity[] = [];
  let deliver: (activity: RingingActivity) => void = (a) => void early.push(a);
  const stopListening = await bus.listen(LIVE.ringing(accountId).name, (payload) => deliver(payload as RingingActivity));
  let calls: callsV1.Call[];
  try {
    calls = await snapshot();
  } catch (error) {
    stopListening();
    throw error; // answered as problem+json, as on any route
  }

  let sessionEnd: NodeJS.Timeout | undefined;
  const { send, finish } = openEventStream(request, reply, () => {
    stopListening();
    clearTimeout(sessionEnd);
  });
  if (closeAt) {
    sessionEnd = setTimeout(() => {
      send('session-expired', `session:${closeAt.toISOString()}`, { session_expires_at: closeAt.toISOString() });
      finish();
    }, Math.max(0, closeAt.getTime() - Date.now()));
  }

  const announced = new Set<string>();
  const gone = new Set<string>();
  const ringing = (call: callsV1.Call) => {
    if (announced.has(call.id) || gone.has(call.id)) return;
    announced.add(call.id);
    send('ringing', `${call.id}:ringing`, presentCall(call));
  };
  deliver = (activity) => {
    if (activity.kind === 'ringing') return ringing(activity.call);
    if (gone.has(activity.call.id)) return;
    gone.add(activity.call.id);
    if (announced.delete(activity.call.id)) {
      send('gone', `${activity.call.id}:gone`, { call_id: activity.call.id, reason: activity.reason, call: presentCall(activity.call) });
    }
  };
  // Departures heard while the snapshot was read may be in it: those calls are not announced at all.
  for (const activity of early) if (activity.kind === 'gone') gone.add(activity.call.id);
  for (const call of calls) ringing(call);
  for (const activity of early.splice(0)) if (activity.kind === 'ringing') deliver(activity);
}
