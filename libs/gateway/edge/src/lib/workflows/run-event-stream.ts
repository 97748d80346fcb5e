import { FastifyReply, FastifyRequest } from 'fastify';
import { LIVE, publicEnvelope, workflowsV1, WorkflowRunActivity } from '@parley/contracts';
import { Bus } from '@parley/messaging';
import { listenThenRead, openEventStream } from '../calls/event-stream';
import { presentRun } from './workflow-presenter';

/** The statuses a run ends in; its stream ends with them. */
const FINAL = new Set(['completed', 'cancelled']);

/**
 * `GET /v1/workflows/{id}/runs/{run_id}/events` as Server-Sent Events, on the calls stream's machinery (listening
 * starts before the snapshot is read, so nothing in between is lost). The first message is the run as it is
 * (`workflow_run.updated`); then every event of the run as it is recorded (its type, the webhook envelope as data)
 * and the run after each change (`workflow_run.updated`). A run older than the last one sent is stale and skipped;
 * the stream ends after the run is `completed` or `cancelled` (at once for a run that already is).
 */
export async function streamRunEvents(
  bus: Bus,
  runId: string,
  snapshot: () => Promise<workflowsV1.Run | undefined>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const live = await listenThenRead(bus, LIVE.workflowRun(runId), async () => {
    const found = await snapshot();
    if (!found) throw new Error('workflows service answered without a run');
    return found;
  });

  const { send, finish } = openEventStream(request, reply, live.stopListening);
  let last: { updated_at: string; json: string } | undefined;
  let over = false;
  const update = (run: workflowsV1.Run) => {
    if (over) return;
    const presented = presentRun(run);
    const json = JSON.stringify(presented);
    if (last && (presented.updated_at < last.updated_at || json === last.json)) return;
    last = { updated_at: presented.updated_at, json };
    send('workflow_run.updated', `${presented.id}:${presented.updated_at}`, presented);
    if (FINAL.has(presented.status)) {
      over = true;
      finish();
    }
  };

  const deliver = (activity: WorkflowRunActivity) => {
    if (activity.kind === 'run') return update(activity.run);
    if (activity.kind === 'event' && !over) send(activity.event.type, activity.event.id, publicEnvelope(activity.event));
  };
  // Events heard before the snapshot are sent first; the runs heard then are already in the snapshot.
  for (const activity of live.early.splice(0)) if (activity.kind !== 'run') deliver(activity);
  update(live.snapshot);
  live.follow(deliver);
}
