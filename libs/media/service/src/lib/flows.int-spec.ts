import { Flow, ToolConfigOf, ToolRequest } from '@parley/contracts';
import { FakeChatCompletionBody } from '@parley/llm';
import { callerSpeechMulaw } from '@parley/speech';
import type { AgentSpec } from '@parley/voice-engine';
import { until } from './testing/caller-line';
import { carriesToneOf, closeAll, endpoint, isClear, isMedia, nextMessage, pcmOf, PhoneCall, placeCall, spokenTexts } from './testing/phone-call';

/*
 * Conversation flows over the real stack (the harness of conversation.int-spec.ts: a Twilio stream to the media
 * worker, the real Deepgram, ElevenLabs and OpenAI-compatible adapters against local fakes, the caller speaking
 * synthetic speech over a comfort-noise line). The model's routing call (one JSON completion) and its streamed
 * answers are told apart by the fake model by `stream`; events are injected through the worker's session of the
 * call, as the InjectEvent command does; every move of the flow reaches the control plane as RecordFlowTransition.
 */

const SYSTEM_PROMPT = 'You are Ada of Parley.';

/** A conversation agent on Deepgram and ElevenLabs with `flow`, quiet-line timers off. */
function flowAgent(flow: Flow, language: { greeting?: string } = {}): AgentSpec {
  return {
    mode: 'conversation',
    languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: SYSTEM_PROMPT, stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada', ...language }],
    conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    flow,
  };
}

const isRouting = (body: FakeChatCompletionBody) => !body.stream;
const routingRequests = (c: PhoneCall) => c.llm.requests.filter((r) => isRouting(r.body));
const answerRequests = (c: PhoneCall) => c.llm.requests.filter((r) => !isRouting(r.body));
const systemOf = (body: FakeChatCompletionBody) => String(body.messages[0]?.content);

/** The flow's moves as the calls service received them, in the order they came. */
function moves(c: PhoneCall) {
  return c.control.transitions.map((t) => ({
    from: t.from_node,
    to: t.to_node,
    kind: t.kind,
    edge: t.edge_index,
    ...(t.when ? { when: t.when } : {}),
    ...(t.event ? { event: t.event } : {}),
    ...(t.captured_json ? { captured: JSON.parse(t.captured_json) as unknown } : {}),
  }));
}

afterEach(closeAll);
afterAll(closeAll);

describe('conversation flows over the media worker (Twilio stream, real adapters, fake vendors)', () => {
  it('qualifies a lead: the routing call captures typed values (asking for a missing one), a router moves on by expression, the static close is said whole and ends the call completed', async () => {
    const nameOnly = 'Hi, this is Dana speaking.';
    const budget = 'My budget is about two thousand dollars.';
    const close = 'Thanks Dana, a specialist will call you.';
    const c = await placeCall({
      spec: flowAgent({
        start: 'greet',
        variables: { budget: 'number' },
        nodes: [
          {
            id: 'greet',
            prompt: 'Ask for the caller’s name and budget.',
            edges: [{ to: 'check', when: 'the caller gave their name and budget', capture: { name: 'string', budget: 'number' } }],
          },
          {
            id: 'check',
            type: 'router',
            description: 'Sorts the lead by budget.',
            edges: [
              { to: 'close_no', type: 'always' },
              { to: 'close_yes', type: 'expression', expression: { conditions: [{ variable: 'budget', operator: 'gte', value: 1000 }] } },
            ],
          },
          { id: 'close_yes', type: 'static', say: 'Thanks {{name}}, a specialist will call you.' },
          { id: 'close_no', type: 'static', say: 'Thanks {{name}}, we will send you our brochure.' },
        ],
      }),
      variables: {},
      utterances: [nameOnly, budget],
      llm: (body) => {
        if (isRouting(body)) {
          const heard = String(body.messages[1]?.content);
          // The budget as the caller's words put it: text, which the capture's type makes a number.
          return JSON.stringify({ edge: 1, values: heard.includes(budget) ? { name: 'Dana', budget: '2,000' } : { name: 'Dana' } });
        }
        return systemOf(body).includes('still has to give: budget') ? 'And what budget do you have in mind?' : 'May I have your name and budget?';
      },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(nameOnly));
    await until(() => c.control.turnsOf('assistant')[1], 'the question for the budget');
    const closing = nextMessage(c.stream, (m) => isMedia(m) && carriesToneOf(pcmOf(m), close));
    await c.line.say(callerSpeechMulaw(budget));
    await closing;
    const end = await until(() => c.control.ends[0], 'the end of the call');
    await c.stream.closed;

    // The routing call: one JSON completion at temperature 0, the numbered transitions with their values' types.
    const [first, second] = routingRequests(c);
    expect(routingRequests(c)).toHaveLength(2);
    expect(first.body).toMatchObject({ model: 'fake-model', temperature: 0, response_format: { type: 'json_object' } });
    expect(first.body.tools).toBeUndefined();
    expect(first.body.messages).toHaveLength(2);
    expect(first.body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('Answer with one JSON object and nothing else') });
    expect(first.body.messages[1]).toEqual({
      role: 'user',
      content: [
        'Current step: greet (Ask for the caller’s name and budget.)',
        '',
        'Transitions:',
        '1. When: the caller gave their name and budget. Next step: check (Sorts the lead by budget.). Values: name (string), budget (number).',
        '',
        'Conversation (most recent last):',
        'Agent: Hello.',
        `Caller: ${nameOnly}`,
      ].join('\n'),
    });
    expect(second.body.messages[1].content).toContain(`Agent: And what budget do you have in mind?\nCaller: ${budget}`);
    // The chosen edge lacked the budget: the flow stayed, and the node's answer asked for it.
    expect(answerRequests(c).map((r) => systemOf(r.body))).toContainEqual(expect.stringContaining('the caller still has to give: budget. Ask for it.'));
    expect(systemOf(answerRequests(c)[0].body)).toBe(`${SYSTEM_PROMPT}\n\nAsk for the caller’s name and budget.`);

    // Reported in order: the start, the intent edge with its typed captures, the router's expression edge.
    expect(moves(c)).toEqual([
      { from: '', to: 'greet', kind: 'start', edge: -1 },
      { from: 'greet', to: 'check', kind: 'intent', edge: 0, when: 'the caller gave their name and budget', captured: { name: 'Dana', budget: 2000 } },
      { from: 'check', to: 'close_yes', kind: 'expression', edge: 1 },
    ]);
    // In the stream's one sequence with the turns, each in its place (the writer sends one report at a time, in order).
    const reports = [...c.control.turns, ...c.control.transitions].sort((a, b) => a.at - b.at);
    expect(reports.map((r) => ('role' in r ? r.role : r.kind))).toEqual(['assistant', 'start', 'user', 'assistant', 'user', 'intent', 'expression', 'assistant']);
    const seqs = c.control.transitions.map((t) => t.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(seqs[0]).toBeGreaterThan(0);
    expect(c.control.transitions[1].at_ms).toBeGreaterThanOrEqual(c.control.turns[3].end_ms);

    // The static close, said exactly with the captured name, synthesized whole and heard; then the call completed.
    // Neither early answer was said: the first lacked the ask for the budget, the second was overtaken by the move.
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello.', 'And what budget do you have in mind?', close]);
    expect(c.control.turns.map((t) => [t.role, t.text, t.interrupted])).toEqual([
      ['assistant', 'Hello.', false],
      ['user', nameOnly, false],
      ['assistant', 'And what budget do you have in mind?', false],
      ['user', budget, false],
      ['assistant', close, false],
    ]);
    expect(end.reason).toBe('completed');
    expect(c.control.turns[4].at).toBeLessThanOrEqual(end.at);
    expect(c.twilio.callResources.get(c.sid)?.status).toBe('completed');
  }, 30_000);

  it('moves on an injected event at once: the answer being said is cut, and the static line says the payload’s fields', async () => {
    const question = 'Has my payment gone through yet?';
    const long = 'Let me keep you company while the bank answers. Payments like this one usually take a minute or two. I will tell you the moment it arrives.';
    const paid = 'Payment of 42 dollars received for order A7. Thank you, Sam!';
    const c = await placeCall({
      spec: flowAgent({
        start: 'wait',
        nodes: [
          { id: 'wait', prompt: 'The payment is being processed; keep the caller informed.', edges: [{ to: 'paid', type: 'event', event: 'payment_received', when: 'paid' }] },
          { id: 'paid', type: 'static', say: 'Payment of {{amount}} dollars received for order {{order.id}}. Thank you, {{name}}!' },
        ],
      }),
      utterances: [question],
      llm: () => ({ content: long, chunkDelayMs: 40 }),
      voice: { msPerChar: 50, chunkMs: 100, chunkIntervalMs: 100 },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.stream.receivedFrames >= 60, 'the answer playing');
    const session = c.media.sessionOf(c.call.id);
    if (!session) throw new Error('no session holds the call');
    const clear = nextMessage(c.stream, isClear);
    const paidAudio = nextMessage(c.stream, (m) => isMedia(m) && carriesToneOf(pcmOf(m), paid));
    await session.injectEvent('payment_received', { amount: 42, order: { id: 'A7' } });
    const { at: clearAt } = await clear;
    const { at: paidAt } = await paidAudio;
    const end = await until(() => c.control.ends[0], 'the end of the call');

    expect(moves(c)).toEqual([
      { from: '', to: 'wait', kind: 'start', edge: -1 },
      { from: 'wait', to: 'paid', kind: 'event', edge: 0, when: 'paid', event: 'payment_received' },
    ]);
    // No routing call (the node has no intent edge); one answer, cut to what was heard.
    expect(routingRequests(c)).toHaveLength(0);
    expect(answerRequests(c)).toHaveLength(1);
    const [, , answer, line] = c.control.turns;
    expect(answer).toMatchObject({ role: 'assistant', interrupted: true });
    expect(long.startsWith(answer.text)).toBe(true);
    expect(answer.text.length).toBeLessThan(long.length);
    expect(line).toMatchObject({ role: 'assistant', text: paid, interrupted: false });
    expect(c.stream.clears).toBe(1);
    expect(paidAt).toBeGreaterThan(clearAt);
    expect(spokenTexts(c.elevenLabs, 'text')).toContain(paid);
    expect(end.reason).toBe('completed');
  }, 30_000);

  it('lets an llm node reached by an event speak at once, under its prompt with the payload filled in and told of the event', async () => {
    const thanks = 'Thank you, your payment came through.';
    const c = await placeCall({
      spec: flowAgent({
        start: 'wait',
        nodes: [
          { id: 'wait', prompt: 'Keep the caller informed.', edges: [{ to: 'thank', type: 'event', event: 'payment_received' }] },
          { id: 'thank', prompt: 'Thank {{name}} for the payment of {{amount}} dollars.' },
        ],
      }),
      llm: () => thanks,
    });
    await until(() => c.control.turns[0], 'the greeting');
    const session = c.media.sessionOf(c.call.id);
    if (!session) throw new Error('no session holds the call');
    await session.injectEvent('payment_received', { amount: 42 });
    const answer = await until(() => c.control.turns[1], 'the answer to the event');

    expect(moves(c)).toEqual([
      { from: '', to: 'wait', kind: 'start', edge: -1 },
      { from: 'wait', to: 'thank', kind: 'event', edge: 0, event: 'payment_received' },
    ]);
    expect(c.llm.requests).toHaveLength(1);
    expect(c.llm.requests[0].body.messages).toEqual([
      { role: 'system', content: `${SYSTEM_PROMPT}\n\nThank Sam for the payment of 42 dollars.` },
      { role: 'assistant', content: 'Hello.' },
      { role: 'system', content: expect.stringContaining('An outside system reported the event "payment_received"') },
    ]);
    expect(answer).toMatchObject({ role: 'assistant', text: thanks, interrupted: false });
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello.', thanks]);
    expect(c.control.ends).toEqual([]);
  }, 20_000);

  it('keeps an event no edge waits for yet, and follows it as soon as the flow reaches a node that does', async () => {
    const order = 'I would like to pay for order A7.';
    const c = await placeCall({
      spec: flowAgent({
        start: 'collect',
        nodes: [
          { id: 'collect', prompt: 'Ask which order the caller pays for.', edges: [{ to: 'wait', when: 'the caller named the order' }] },
          { id: 'wait', prompt: 'Say the payment is on its way.', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
          { id: 'paid', type: 'static', say: 'Your {{amount}} dollars arrived.' },
        ],
      }),
      utterances: [order],
      llm: (body) => (isRouting(body) ? '{"edge": 1, "values": {}}' : 'Which order is it for?'),
    });
    await until(() => c.control.turns[0], 'the greeting');
    const session = c.media.sessionOf(c.call.id);
    if (!session) throw new Error('no session holds the call');
    await session.injectEvent('payment_received', { amount: 15 });
    await c.line.say(callerSpeechMulaw(order));
    const end = await until(() => c.control.ends[0], 'the end of the call');

    expect(moves(c)).toEqual([
      { from: '', to: 'collect', kind: 'start', edge: -1 },
      { from: 'collect', to: 'wait', kind: 'intent', edge: 0, when: 'the caller named the order' },
      { from: 'wait', to: 'paid', kind: 'event', edge: 0, event: 'payment_received' },
    ]);
    // The early answer of `collect` was dropped when the flow moved: the caller heard only the line.
    expect(c.control.turns.map((t) => [t.role, t.text])).toEqual([
      ['assistant', 'Hello.'],
      ['user', order],
      ['assistant', 'Your 15 dollars arrived.'],
    ]);
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual(['Hello.', 'Your 15 dollars arrived.']);
    expect(end.reason).toBe('completed');
  }, 30_000);

  it('waits for the flow to start when an event comes during the greeting: the start, then the event, the line said once after the greeting', async () => {
    const greeting = 'Hello, this is Ada from the billing desk of Parley.';
    const line = 'Your payment of 42 dollars arrived.';
    const c = await placeCall({
      spec: flowAgent(
        {
          start: 'wait',
          nodes: [
            { id: 'wait', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
            { id: 'paid', type: 'static', say: 'Your payment of {{amount}} dollars arrived.' },
          ],
        },
        { greeting },
      ),
    });
    await c.firstMedia;
    const session = c.media.sessionOf(c.call.id);
    if (!session) throw new Error('no session holds the call');
    await session.injectEvent('payment_received', { amount: 42 });
    const end = await until(() => c.control.ends[0], 'the end of the call');

    expect(moves(c)).toEqual([
      { from: '', to: 'wait', kind: 'start', edge: -1 },
      { from: 'wait', to: 'paid', kind: 'event', edge: 0, event: 'payment_received' },
    ]);
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual([greeting, line]);
    expect(c.control.turns.map((t) => [t.role, t.text, t.interrupted])).toEqual([
      ['assistant', greeting, false],
      ['assistant', line, false],
    ]);
    expect(c.stream.clears).toBe(0);
    expect(end.reason).toBe('completed');
  }, 20_000);

  it('routes by a variable the call was placed with: a router between two nodes picks the one whose prompt the model answers under', async () => {
    const welcome = 'Welcome back, Sam. How can I help?';
    const question = 'I have a question about my bill.';
    const answer = 'Of course, I will put you on our priority line.';
    const c = await placeCall({
      spec: flowAgent(
        {
          start: 'welcome',
          nodes: [
            { id: 'welcome', type: 'static', say: 'Welcome back, {{name}}. How can I help?', edges: [{ to: 'route', type: 'always' }] },
            {
              id: 'route',
              type: 'router',
              edges: [
                { to: 'standard', type: 'always' },
                { to: 'gold', type: 'expression', expression: { conditions: [{ variable: 'tier', operator: 'in', value: ['gold', 'platinum'] }] } },
              ],
            },
            { id: 'gold', prompt: 'The caller is a gold member: offer the priority line.' },
            { id: 'standard', prompt: 'Point the caller to the help centre.' },
          ],
        },
        { greeting: '' },
      ),
      variables: { name: 'Sam', tier: 'gold' },
      utterances: [question],
      llm: () => answer,
    });
    await until(() => c.control.turns[0], 'the welcome line');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turns[2], 'the answer');

    expect(moves(c)).toEqual([
      { from: '', to: 'welcome', kind: 'start', edge: -1 },
      { from: 'welcome', to: 'route', kind: 'always', edge: 0 },
      { from: 'route', to: 'gold', kind: 'expression', edge: 1 },
    ]);
    // Expressions and always edges need no model: the one request is the gold node's answer.
    expect(c.llm.requests).toHaveLength(1);
    expect(c.llm.requests[0].body).toMatchObject({ stream: true });
    expect(c.llm.requests[0].body.messages).toEqual([
      { role: 'system', content: `${SYSTEM_PROMPT}\n\nThe caller is a gold member: offer the priority line.` },
      { role: 'assistant', content: welcome },
      { role: 'user', content: question },
    ]);
    expect(spokenTexts(c.elevenLabs, 'text')).toEqual([welcome, answer]);
    expect(c.control.turns.map((t) => [t.role, t.text])).toEqual([
      ['assistant', welcome],
      ['user', question],
      ['assistant', answer],
    ]);
    expect(c.control.ends).toEqual([]);
  }, 20_000);

  it('forces the node’s tool: its first request names it in tool_choice and shows only it (and the opt-out); once it ran, the next request does not force it', async () => {
    const question = 'Hi, my account number is 1234.';
    const answer = 'Thanks, your account is active.';
    const { server, url } = await endpoint((req) => ({ account: req.url.split('/').pop(), status: 'active' }));
    const lookup: ToolConfigOf<never, ToolRequest> = {
      kind: 'custom_function',
      name: 'lookup_account',
      description: 'Looks an account up by its number.',
      request: {
        url: `${url}/accounts/{{account}}`,
        method: 'GET',
        timeout_seconds: 5,
        parameters: [{ name: 'account', type: 'string', required: true, in: 'path', description: 'The account number.' }],
      },
    };
    const c = await placeCall({
      spec: flowAgent({
        start: 'verify',
        nodes: [
          {
            id: 'verify',
            prompt: 'Look the caller’s account up before anything else.',
            tool: 'lookup_account',
            tools: [],
            edges: [{ to: 'help', when: 'the caller asks for something else' }],
          },
          { id: 'help', prompt: 'Help the caller.' },
        ],
      }),
      runtime: { tool_configs: [lookup] },
      utterances: [question],
      llm: (body) => {
        if (isRouting(body)) return '{"edge": null, "values": {}}';
        return body.messages.some((m) => m.role === 'tool') ? answer : { toolCalls: [{ id: 'call_lookup', name: 'lookup_account', arguments: '{"account":"1234"}' }] };
      },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const reply = await until(() => c.control.turnsOf('assistant')[1], 'the answer');

    // The routing call carries no tools; the flow stayed, so the answer started beside it was kept.
    expect(routingRequests(c)).toHaveLength(1);
    expect(routingRequests(c)[0].body.tools).toBeUndefined();
    expect(routingRequests(c)[0].body.tool_choice).toBeUndefined();
    const [forced, after] = answerRequests(c);
    expect(answerRequests(c)).toHaveLength(2);
    expect(forced.body.tool_choice).toEqual({ type: 'function', function: { name: 'lookup_account' } });
    expect(forced.body.tools?.map((t) => t.function.name).sort()).toEqual(['lookup_account', 'record_opt_out']);
    expect(after.body.tool_choice).toBeUndefined();
    expect(after.body.messages.slice(-1)).toEqual([
      { role: 'tool', tool_call_id: 'call_lookup', content: JSON.stringify({ account: '1234', status: 'active' }) },
    ]);
    expect(server.requests.map((r) => [r.method, r.url])).toEqual([['GET', '/accounts/1234']]);
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'lookup_account', kind: 'custom_function', ok: true })]);
    expect(reply).toMatchObject({ text: answer, interrupted: false });
    expect(moves(c)).toEqual([{ from: '', to: 'verify', kind: 'start', edge: -1 }]);
  }, 20_000);
});
