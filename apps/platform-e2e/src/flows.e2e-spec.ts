import { FakeTwilioServer } from '@parley/carrier-twilio';
import { FakeChatCompletionBody, FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, EventStreamClient, RunningPlatform } from '@parley/testing';
import { say } from './support/caller-speech';
import { PhonePlatform, startPhonePlatform } from './support/phone-platform';
import { until } from './support/until';

const KEY = 'vsk_flows_owner_key_00000001';
const ORDER = 'I am paying for order A 7.';
const LINK = 'I am sending you the payment link now.';
const PAID = 'Thank you Ada, we received 49 dollars for order A7 on the card ending 4242.';

/**
 * A conversation flow on the running platform: the agent is created with a flow through the API, a call placed
 * to it through Twilio (FakeTwilioServer), the caller speaks on its Media Stream (Deepgram and the model are fakes
 * on their real protocols; the voice is the offline one), and a client's POST /v1/calls/{id}/events releases the
 * flow's event edge. The moves are on the call's event stream (`call.flow.transitioned`) and in its transcript;
 * what the routing call captured is on the call record.
 */
describe('conversation flows on the running platform (standalone): routing, an injected event, the moves reported', () => {
  let phone: PhonePlatform;
  let platform: RunningPlatform;
  let api: ApiClient;
  let twilio: FakeTwilioServer;
  let deepgram: FakeDeepgramServer;
  let llm: FakeOpenAiServer;
  let agentId: string;

  beforeAll(async () => {
    phone = await startPhonePlatform(KEY);
    ({ platform, api, twilio, deepgram, llm } = phone);
    const agent = await api.post('/v1/agents', {
      name: 'Payments desk',
      languages: [{ code: 'en-US', greeting: 'Hello, this is the payments desk.', stt_provider: 'deepgram', system_prompt: 'You take payments by phone.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      flow: {
        start: 'ask',
        nodes: [
          { id: 'ask', prompt: 'Ask which order the caller pays for.', edges: [{ to: 'wait', when: 'the caller named the order', capture: { order_id: 'string' } }] },
          { id: 'wait', prompt: 'Tell the caller the payment link is on its way.', edges: [{ to: 'paid', type: 'event', event: 'payment_received', when: 'the payment arrived' }] },
          { id: 'paid', type: 'static', say: 'Thank you {{name}}, we received {{amount}} dollars for order {{order_id}} on the card ending {{card.last4}}.' },
        ],
      },
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  }, 120_000);

  afterAll(() => phone?.stop());

  /**
   * A call to the agent placed and answered, its event stream open (`moved` waits for the flow to enter a node); the
   * caller will say ORDER, the routing call picks the edge to `wait` capturing order A7, and the wait node answers LINK.
   */
  async function answeredCall(to: string) {
    deepgram.utterances(ORDER);
    llm.reply((body: FakeChatCompletionBody) => (body.stream ? LINK : JSON.stringify({ edge: 1, values: { order_id: 'A7' } })));
    const created = await api.post('/v1/calls', { agent_id: agentId, to, variables: { name: 'Ada' } });
    expect(created.status).toBe(201);
    const call = created.body as { id: string; carrier_call_id: string };
    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${call.id}/events`, KEY);
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    const moved = (node: string) => stream.waitFor((e) => e.event === 'call.flow.transitioned' && e.data.to === node, 30_000);
    return { call, stream, moved };
  }

  it('routes the caller’s words with a capture, moves on the injected event at once and closes with the static line: the moves streamed, in the transcript, the capture on the call', async () => {
    const { call, stream, moved } = await answeredCall('+15550100077');
    // Before the media stream opens no conversation runs: the event is streamed to observers, not delivered yet (kept
    // for the conversation; no node of this flow waits for it), its payload on the call's variables at once.
    const early = await api.post(`/v1/calls/${call.id}/events`, { name: 'link_opened', payload: { link: { id: 'L1' } } });
    expect(early.status).toBe(202);
    expect(early.body).toMatchObject({ object: 'call_event', name: 'link_opened', delivered: false });
    expect((await api.get(`/v1/calls/${call.id}`)).body.variables).toMatchObject({ name: 'Ada', 'link.id': 'L1' });
    const media = await twilio.connectMediaStream(call.carrier_call_id);

    await moved('ask');
    await say(media, ORDER);
    await moved('wait');
    await until(async () => JSON.stringify((await api.get(`/v1/calls/${call.id}/transcript`)).body).includes(LINK), 'the wait node’s answer');

    const injected = await api.post(`/v1/calls/${call.id}/events`, { name: 'payment_received', payload: { amount: 49, card: { last4: '4242' } } });
    expect(injected.status).toBe(202);
    expect(injected.body).toMatchObject({ object: 'call_event', call_id: call.id, name: 'payment_received', delivered: true });
    await moved('paid');
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'ended', 30_000);
    await stream.ended;

    const expected = [
      { object: 'flow_transition', call_id: call.id, from: '', to: 'ask', kind: 'start', edge_index: -1, at_ms: expect.any(Number) },
      { object: 'flow_transition', call_id: call.id, from: 'ask', to: 'wait', kind: 'intent', edge_index: 0, when: 'the caller named the order', captured: { order_id: 'A7' }, at_ms: expect.any(Number) },
      { object: 'flow_transition', call_id: call.id, from: 'wait', to: 'paid', kind: 'event', edge_index: 0, when: 'the payment arrived', event: 'payment_received', at_ms: expect.any(Number) },
    ];
    // Streamed live as they happened, the injected event beside them.
    expect(stream.events.filter((e) => e.event === 'call.flow.transitioned').map((e) => e.data)).toEqual(expected);
    expect(stream.events.filter((e) => e.event === 'call.event').map((e) => e.data)).toEqual([
      expect.objectContaining({ object: 'call_event', name: 'link_opened' }),
      expect.objectContaining({ object: 'call_event', name: 'payment_received', payload: { amount: 49, card: { last4: '4242' } } }),
    ]);

    // The transcript: the turns with the static line said whole, variables filled from the call, the capture and the payload; the moves beside them.
    const transcript = (await api.get(`/v1/calls/${call.id}/transcript`)).body;
    expect(transcript.turns.map((t: { role: string; text: string }) => [t.role, t.text])).toEqual([
      ['assistant', 'Hello, this is the payments desk.'],
      ['user', ORDER],
      ['assistant', LINK],
      ['assistant', PAID],
    ]);
    expect(transcript.flow_transitions).toEqual(expected);
    const times = transcript.flow_transitions.map((t: { at_ms: number }) => t.at_ms);
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // The routing call was the JSON completion; the call ended completed after the last line, the capture on its record.
    const routing = llm.requests.filter((r) => !r.body.stream);
    expect(routing).toHaveLength(1);
    expect(routing[0].body.response_format).toEqual({ type: 'json_object' });
    expect(routing[0].body.messages[1].content).toContain('1. When: the caller named the order. Next step: wait (Tell the caller the payment link is on its way.). Values: order_id (string).');
    const ended = (await api.get(`/v1/calls/${call.id}`)).body;
    expect(ended).toMatchObject({ status: 'ended', end_reason: 'completed' });
    expect(ended.variables).toMatchObject({ name: 'Ada', order_id: 'A7', 'link.id': 'L1', amount: '49', 'card.last4': '4242' });
    // Over: an event is refused.
    const late = await api.post(`/v1/calls/${call.id}/events`, { name: 'payment_received', payload: {} });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('conflict');
  }, 60_000);

  it('brings the caller back to the node the flow was on when a transfer is not answered: no new start, and that node’s edges apply', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'Billing desk',
      languages: [{ code: 'en-US', greeting: 'Hello, billing.', stt_provider: 'deepgram', system_prompt: 'You help with bills.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      transfer_number: '+15550100088',
      flow: {
        start: 'ask',
        nodes: [
          { id: 'ask', prompt: 'Ask what the caller needs.', edges: [{ to: 'human', when: 'the caller wants a person' }] },
          { id: 'human', prompt: 'Put the caller through to a person.', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
          { id: 'paid', type: 'static', say: 'Thank you, your payment arrived.' },
        ],
      },
    });
    expect(agent.status).toBe(201);
    deepgram.utterances('A person, please.');
    // The routing call moves to `human`; there, the model transfers (elsewhere it only answers).
    llm.reply((body: FakeChatCompletionBody) =>
      !body.stream
        ? JSON.stringify({ edge: 1 })
        : String(body.messages[0]?.content).includes('Put the caller through')
          ? { toolCalls: [{ id: 'call_xfer', name: 'transfer_call', arguments: '{"reason":"asked for a person"}' }] }
          : 'One moment.',
    );
    const call = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15550100079' })).body as { id: string; carrier_call_id: string };
    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${call.id}/events`, KEY);
    const moved = (node: string) => stream.waitFor((e) => e.event === 'call.flow.transitioned' && e.data.to === node, 30_000);
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    const first = await twilio.connectMediaStream(call.carrier_call_id);
    await moved('ask');
    // The transfer may take the line while the caller's trailing silence is still being sent.
    const speaking = say(first, 'A person, please.').catch(() => undefined);
    await moved('human');
    await first.closed; // Twilio stops the stream when the call moves to the <Dial>
    await speaking;

    expect((await twilio.sendDialResult(call.carrier_call_id, 'no-answer')).status).toBe(200);
    await twilio.connectMediaStream(call.carrier_call_id);
    const sorry = 'I am sorry, I could not reach them. Is there anything else I can help you with?';
    await until(async () => JSON.stringify((await api.get(`/v1/calls/${call.id}/transcript`)).body).includes(sorry), 'the apology on the new stream');
    // Only `human` waits for this event: the conversation is back on it, not at the start.
    const injected = await api.post(`/v1/calls/${call.id}/events`, { name: 'payment_received', payload: {} });
    expect(injected.body).toMatchObject({ delivered: true });
    await moved('paid');
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'ended', 30_000);
    await stream.ended;

    const transcript = (await api.get(`/v1/calls/${call.id}/transcript`)).body;
    expect(transcript.flow_transitions.map((t: { from: string; to: string; kind: string }) => [t.from, t.to, t.kind])).toEqual([
      ['', 'ask', 'start'],
      ['ask', 'human', 'intent'],
      ['human', 'paid', 'event'],
    ]);
    expect(transcript.turns.map((t: { role: string; text: string }) => t.text).slice(-2)).toEqual([sorry, 'Thank you, your payment arrived.']);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed' });
  }, 90_000);

  it('keeps an event posted before the media stream opens for the conversation: it fires once the flow reaches the node waiting for it', async () => {
    const { call, stream, moved } = await answeredCall('+15550100078');
    // The payment system reports right after the answer, before the stream opens: not delivered yet, kept.
    const early = await api.post(`/v1/calls/${call.id}/events`, { name: 'payment_received', payload: { amount: 49, card: { last4: '4242' } } });
    expect(early.status).toBe(202);
    expect(early.body).toMatchObject({ object: 'call_event', name: 'payment_received', delivered: false });
    const media = await twilio.connectMediaStream(call.carrier_call_id);

    await moved('ask');
    await say(media, ORDER);
    // The flow reaches the payment step and the kept event moves it on at once, with its payload in the line.
    await moved('paid');
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'ended', 30_000);
    await stream.ended;

    const transcript = (await api.get(`/v1/calls/${call.id}/transcript`)).body;
    expect(transcript.flow_transitions.map((t: { from: string; to: string; kind: string; event?: string }) => [t.from, t.to, t.kind, t.event])).toEqual([
      ['', 'ask', 'start', undefined],
      ['ask', 'wait', 'intent', undefined],
      ['wait', 'paid', 'event', 'payment_received'],
    ]);
    expect(transcript.turns.map((t: { role: string; text: string }) => [t.role, t.text]).at(-1)).toEqual(['assistant', PAID]);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed' });
  }, 60_000);
});
