import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { FakeTwilioCallRequest, FakeTwilioServer } from '@parley/carrier-twilio';
import { ApiClient, EventStreamClient, RunningPlatform } from '@parley/testing';
import { until } from './support/until';

const KEY = 'vsk_workflows_owner_key_00001';
const stripe = new Stripe('sk_test_unused');
const CONCURRENCY = 5;
const RETRY_WAIT_SECONDS = 60;
const GREETING = 'Hello {{first_name}}, this is the clinic.';

/**
 * What each recipient's phone does when it rings: answers (the agent greets; the callee hangs up, or the call is
 * ended through the API), is busy, or rings out once and answers when called again.
 */
type Script = 'answers' | 'answers_ended_by_api' | 'busy' | 'no_answer_then_answers';
const SCRIPTS: Script[] = [
  'no_answer_then_answers',
  'answers',
  'busy',
  'answers',
  'answers_ended_by_api',
  'no_answer_then_answers',
  'answers',
  'answers',
  'busy',
  'answers',
  'no_answer_then_answers',
  'answers_ended_by_api',
  'answers',
  'answers',
  'busy',
  'answers',
  'no_answer_then_answers',
  'answers',
  'answers_ended_by_api',
  'answers',
];
const NAMES = ['Ada', 'Grace', 'Linus', 'Barbara', 'Alan', 'Edsger', 'Frances', 'Donald', 'Margaret', 'Ken', 'Radia', 'Tim', 'Hedy', 'John', 'Sophie', 'Dennis', 'Karen', 'Guido', 'Anita', 'Bjarne'];
// Numbers valid under the North American plan (Twilio is configured, so the service checks them with isValid).
const numberOf = (i: number) => `+14155550${101 + i}`;
const RECIPIENTS = SCRIPTS.map((script, i) => ({ to: numberOf(i), script, first_name: NAMES[i] }));
const scriptOf = (to: string) => (RECIPIENTS.find((r) => r.to === to) as { script: Script }).script;
/** Calls each script places: one, or two (the unanswered one and the retry). */
const callsFor = (script: Script) => (script === 'no_answer_then_answers' ? 2 : 1);
const EXPECTED_CALLS = RECIPIENTS.reduce((n, r) => n + callsFor(r.script), 0);

/** A zone whose local clock stays inside the 00:00-23:59 window for the next quarter of an hour. */
function zoneAwayFromMidnight(): string {
  for (const zone of ['UTC', 'Asia/Tokyo', 'America/New_York']) {
    const [h, m] = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date()).split(':').map(Number);
    if (h * 60 + m < 23 * 60 + 40) return zone;
  }
  return 'UTC';
}

interface Delivery {
  body: string;
  signature: string;
  event: { id: string; type: string; call_id: string | null; created_at: string; data: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The most calls live at once at the carrier: each call from its creation to the end of its leg there. */
function mostLiveAtOnce(twilio: FakeTwilioServer): number {
  const edges: [number, number][] = [];
  for (const call of twilio.callResources.values()) {
    if (call.direction !== 'outbound-api') continue;
    edges.push([call.date_created.getTime(), +1]);
    edges.push([(call.end_time ?? new Date(8.64e15)).getTime(), -1]);
  }
  // An end and a start in the same millisecond: the end first (the line came free, then was taken).
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let most = 0;
  for (const [, delta] of edges) most = Math.max(most, (live += delta));
  return most;
}

/**
 * A workflow run end to end on the running platform (standalone), its calls placed through Twilio's protocol
 * (FakeTwilioServer) with per-number scripted outcomes: 20 recipients, most answer, some are busy (not retried),
 * some ring out and answer the retry 60 s later. The run completes with the right counts, each recipient's state,
 * attempts and reason are right, the run's calls are exactly the calls dialled, never more than the workflow's
 * concurrency live at once at the carrier, and the signed run webhooks and the run's event stream say the same.
 */
describe('workflows: a 20-recipient run with scripted outcomes (standalone, Twilio protocol)', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let api: ApiClient;
  let receiver: Server;
  let secret: string;
  let agentId: string;
  const deliveries: Delivery[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        deliveries.push({ body, signature: String(req.headers['service-signature']), event: JSON.parse(body) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    twilio = new FakeTwilioServer();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        ...(await twilio.platformEnv()),
      },
    });
    api = platform.api(KEY);
    const endpoint = await api.post('/v1/webhook_endpoints', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['workflow_run.*', 'call.transcript.updated'],
    });
    expect(endpoint.status).toBe(201);
    secret = endpoint.body.secret;
    const agent = await api.post('/v1/agents', {
      name: 'Clinic reminders',
      languages: [{ code: 'en', greeting: GREETING }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      post_call: { summary: false },
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
    const closed = new Promise((r) => receiver?.close(r));
    receiver?.closeAllConnections();
    await closed;
  });

  const hooks = (type: string) => deliveries.filter((d) => d.event.type === type);

  it('completes with the right counts, recipients, calls and webhooks, never above its concurrency', async () => {
    // The phones: every call Twilio is asked to place is played by its number's script.
    const callIdOf = new Map<string, string>(); // Twilio CallSid → call id
    const dialsOf = new Map<string, FakeTwilioCallRequest[]>(); // number → its creates, in order
    const problems: string[] = [];
    const driving: Promise<void>[] = [];
    const play = async (create: FakeTwilioCallRequest) => {
      const sid = create.callSid as string;
      const to = String(create.form['To']);
      const callId = new URL(String(create.form['StatusCallback'])).searchParams.get('call') as string;
      callIdOf.set(sid, callId);
      const dials = [...(dialsOf.get(to) ?? []), create];
      dialsOf.set(to, dials);
      const script = scriptOf(to);
      expect(await twilio.sendStatusCallback(sid, 'ringing')).toBe(204);
      if (script === 'busy') {
        expect(await twilio.sendStatusCallback(sid, 'busy')).toBe(204);
        return;
      }
      if (script === 'no_answer_then_answers' && dials.length === 1) {
        expect(await twilio.sendStatusCallback(sid, 'no-answer')).toBe(204);
        return;
      }
      expect(await twilio.sendStatusCallback(sid, 'in-progress')).toBe(204);
      const media = await twilio.connectMediaStream(sid);
      // The agent greets the recipient by name (its variables reached the call); then the call ends.
      await until(
        () => hooks('call.transcript.updated').find((d) => d.event.call_id === callId && d.event.data['role'] === 'assistant'),
        `the greeting on ${callId}`,
        45_000,
      );
      if (script === 'answers_ended_by_api') {
        const ended = await api.post(`/v1/calls/${callId}/end`);
        expect(ended.status).toBe(200);
        expect(ended.body).toMatchObject({ status: 'ended', end_reason: 'hangup' });
      } else {
        // The callee hangs up.
        expect(await twilio.sendStatusCallback(sid, 'completed')).toBe(204);
      }
      await media.closed;
    };
    const seen = new Set<string>();
    const phones = setInterval(() => {
      for (const c of twilio.calls) {
        if (c.action !== 'create' || !c.callSid || seen.has(c.callSid)) continue;
        seen.add(c.callSid);
        driving.push(play(c).catch((e: Error) => void problems.push(`${String(c.form['To'])}: ${e.message}`)));
      }
    }, 20);

    try {
      const zone = zoneAwayFromMidnight();
      const workflow = await api.post('/v1/workflows', {
        name: 'Appointment reminders',
        agent_id: agentId,
        timezone: zone,
        calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '23:59' },
        concurrency: CONCURRENCY,
        retry: { no_answer: { retries: 1, wait_seconds: RETRY_WAIT_SECONDS }, busy: { retries: 0, wait_seconds: 60 } },
        recipient_variables: [{ name: 'first_name', required: true }],
      });
      expect(workflow.status).toBe(201);
      expect(workflow.body).toMatchObject({ object: 'workflow', concurrency: CONCURRENCY, timezone: zone });
      const wf = workflow.body.id as string;

      const started = await api.post(`/v1/workflows/${wf}/runs`, {
        recipients: RECIPIENTS.map((r, i) => ({ to: r.to, variables: { first_name: r.first_name }, metadata: { row: String(i) } })),
        metadata: { campaign: 'e2e' },
      });
      expect(started.status).toBe(201);
      expect(started.body).toMatchObject({
        object: 'workflow_run',
        workflow_id: wf,
        status: 'running',
        recipients_complete: true,
        metadata: { campaign: 'e2e' },
        page: { added: 20, suppressed: 0 },
      });
      expect(started.body.counts.total).toBe(20);
      const runId = started.body.id as string;
      const runPath = `/v1/workflows/${wf}/runs/${runId}`;
      const stream = await EventStreamClient.open(`${platform.baseUrl}${runPath}/events`, KEY);
      expect(stream.status).toBe(200);

      // The no-answer recipients are called again 60 s after their first call: the run is over a little later.
      const run = await until(
        async () => {
          const r = (await api.get(runPath)).body;
          return r.status === 'completed' ? r : undefined;
        },
        'the run to complete',
        150_000,
      );
      await Promise.all(driving);
      expect(problems).toEqual([]);

      // The run and its counts.
      const counts = { total: 20, pending: 0, in_progress: 0, retrying: 0, succeeded: 17, failed: 3, suppressed: 0, cancelled: 0 };
      expect(run).toMatchObject({ id: runId, object: 'workflow_run', workflow_id: wf, status: 'completed', recipients_complete: true, counts });
      expect(Date.parse(run.started_at)).toBeLessThanOrEqual(Date.parse(run.completed_at));
      const listed = (await api.get(`/v1/workflows/${wf}/runs`)).body;
      expect(listed.data).toEqual([expect.objectContaining({ id: runId, status: 'completed', counts })]);

      // Twilio was asked for exactly the calls the scripts make: one per recipient, two for the retried ones.
      const creates = twilio.calls.filter((c) => c.action === 'create');
      expect(creates).toHaveLength(EXPECTED_CALLS);
      expect(creates.every((c) => c.status === 201)).toBe(true);
      for (const r of RECIPIENTS) expect([r.to, dialsOf.get(r.to)?.length]).toEqual([r.to, callsFor(r.script)]);

      // Each recipient: its state, attempts, outcome and reason, its calls in order.
      const recipients = (await api.get(`${runPath}/recipients?limit=100`)).body;
      expect(recipients.has_more).toBe(false);
      expect(recipients.data).toHaveLength(20);
      const recipientOf = new Map<string, Record<string, any>>(); // eslint-disable-line @typescript-eslint/no-explicit-any
      for (const r of recipients.data) recipientOf.set(r.to, r);
      for (const [i, r] of RECIPIENTS.entries()) {
        const got = recipientOf.get(r.to);
        const callIds = (dialsOf.get(r.to) ?? []).map((c) => callIdOf.get(c.callSid as string));
        const busy = r.script === 'busy';
        expect(got).toMatchObject({
          id: expect.stringMatching(/^wfrc_/),
          object: 'workflow_recipient',
          run_id: runId,
          to: r.to,
          timezone: zone,
          variables: { first_name: r.first_name },
          metadata: { row: String(i) },
          state: busy ? 'failed' : 'succeeded',
          attempts: callsFor(r.script),
          last_outcome: busy ? 'busy' : 'other',
          reason: busy ? 'busy' : null,
          call_ids: callIds,
          next_attempt_at: null,
        });
      }
      const failed = (await api.get(`${runPath}/recipients?state=failed`)).body.data.map((r: { to: string }) => r.to).sort();
      expect(failed).toEqual(RECIPIENTS.filter((r) => r.script === 'busy').map((r) => r.to));

      // The run's calls: exactly those dialled, each linked to its recipient, each ended as scripted.
      const calls: Record<string, any>[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
      for (let cursor = ''; ; ) {
        const page = (await api.get(`/v1/calls?workflow_run_id=${runId}&limit=10${cursor ? `&starting_after=${cursor}` : ''}`)).body;
        calls.push(...page.data);
        if (!page.has_more) break;
        cursor = page.next_cursor;
      }
      expect(calls).toHaveLength(EXPECTED_CALLS);
      expect(new Set(calls.map((c) => c.id))).toEqual(new Set(callIdOf.values()));
      for (const call of calls) {
        const script = scriptOf(call.to);
        const recipient = recipientOf.get(call.to) as { id: string; call_ids: string[] };
        const first = recipient.call_ids.indexOf(call.id) === 0;
        const endReason =
          script === 'busy' ? 'busy' : script === 'no_answer_then_answers' && first ? 'no_answer' : script === 'answers_ended_by_api' ? 'hangup' : 'completed';
        expect(call).toMatchObject({
          object: 'call',
          agent_id: agentId,
          direction: 'outbound',
          carrier: 'twilio',
          status: 'ended',
          end_reason: endReason,
          workflow_run_id: runId,
          workflow_recipient_id: recipient.id,
          variables: expect.objectContaining({ first_name: RECIPIENTS.find((r) => r.to === call.to)?.first_name }),
        });
      }

      // The retry waited its 60 s from the end of the unanswered call (and was then placed promptly).
      for (const r of RECIPIENTS.filter((x) => x.script === 'no_answer_then_answers')) {
        const [first, second] = (dialsOf.get(r.to) ?? []).map((c) => twilio.callResources.get(c.callSid as string));
        const waited = (second?.date_created.getTime() ?? 0) - (first?.end_time?.getTime() ?? Infinity);
        expect(waited).toBeGreaterThanOrEqual(RETRY_WAIT_SECONDS * 1000);
        expect(waited).toBeLessThan((RETRY_WAIT_SECONDS + 15) * 1000);
      }

      // Never more calls live at the carrier than the workflow's concurrency, and the run used all of it.
      expect(mostLiveAtOnce(twilio)).toBe(CONCURRENCY);

      // Webhooks: started once, completed once with the counts, one recipient.finished per recipient; all signed.
      await until(() => hooks('workflow_run.completed').length && hooks('workflow_run.recipient.finished').length >= 20, 'the run webhooks', 20_000);
      await new Promise((r) => setTimeout(r, 1500)); // anything delivered twice would be in by now
      for (const d of deliveries) expect(() => stripe.webhooks.constructEvent(d.body, d.signature, secret, 300)).not.toThrow();
      const startedHooks = hooks('workflow_run.started');
      const completedHooks = hooks('workflow_run.completed');
      const finishedHooks = hooks('workflow_run.recipient.finished');
      expect(startedHooks).toHaveLength(1);
      expect(completedHooks).toHaveLength(1);
      expect(finishedHooks).toHaveLength(20);
      expect(startedHooks[0].event).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: 'workflow_run.started',
        call_id: null,
        created_at: expect.any(String),
        data: { workflow_id: wf, run_id: runId, counts: expect.objectContaining({ total: 20, succeeded: 0, failed: 0 }) },
      });
      expect(completedHooks[0].event).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: 'workflow_run.completed',
        call_id: null,
        created_at: expect.any(String),
        data: { workflow_id: wf, run_id: runId, status: 'completed', counts },
      });
      expect(new Set(finishedHooks.map((d) => d.event.data['recipient_id']))).toEqual(new Set([...recipientOf.values()].map((r) => r.id)));
      for (const d of finishedHooks) {
        const recipient = recipientOf.get(d.event.data['to']) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
        const busy = scriptOf(recipient.to) === 'busy';
        expect(d.event).toEqual({
          id: expect.stringMatching(/^evt_/),
          type: 'workflow_run.recipient.finished',
          call_id: recipient.call_ids.at(-1),
          created_at: expect.any(String),
          data: {
            workflow_id: wf,
            run_id: runId,
            recipient_id: recipient.id,
            to: recipient.to,
            state: recipient.state,
            ...(busy ? { reason: 'busy' } : {}),
            attempts: recipient.attempts,
            last_outcome: recipient.last_outcome,
            metadata: recipient.metadata,
          },
        });
      }
      const at = (d: Delivery) => Date.parse(d.event.created_at);
      for (const d of finishedHooks) expect(at(startedHooks[0]) <= at(d) && at(d) <= at(completedHooks[0])).toBe(true);
      // The agent greeted each answered call with its recipient's name.
      for (const d of hooks('call.transcript.updated').filter((h) => h.event.data['role'] === 'assistant')) {
        const to = calls.find((c) => c.id === d.event.call_id)?.to;
        expect(d.event.data['text']).toBe(`Hello ${RECIPIENTS.find((r) => r.to === to)?.first_name}, this is the clinic.`);
      }

      // The run's event stream: its events as they happened, then the run completed, and the stream ends.
      await Promise.race([stream.ended, new Promise((r) => setTimeout(r, 10_000))]);
      const streamed = stream.events;
      stream.close();
      const completedOnStream = streamed.find((e) => e.event === 'workflow_run.completed');
      expect(completedOnStream?.data).toEqual(completedHooks[0].event);
      expect(streamed.filter((e) => e.event === 'workflow_run.recipient.finished').length).toBeGreaterThanOrEqual(15);
      expect(streamed.at(-1)).toMatchObject({ event: 'workflow_run.updated', data: { id: runId, status: 'completed', counts } });
    } finally {
      clearInterval(phones);
    }
  }, 200_000);
});
