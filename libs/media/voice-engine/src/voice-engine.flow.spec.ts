import type { Flow, FlowTransition } from '@parley/contracts';
import { FakeLlm, StreamRequest } from '@parley/llm';
import { agentSettings } from './agent-settings';
import { LineCache } from './line-cache';
import { setup } from './testing/engine-harness';
import type { EngineOptions } from './voice-engine';

/** An agent whose conversation follows `flow`; the caller's silence never ends the call unless asked. */
function flowAgent(flow: Flow, conversation: Record<string, unknown> = {}) {
  return agentSettings(
    {
      languages: [{ code: 'en-US', greeting: 'Hello {{name}}.', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1, ...conversation },
      flow,
      tool_configs: [{ kind: 'custom_function', name: 'lookup', description: 'Look up an order.', request: { url: 'https://orders.invalid/{{id}}' } }],
    },
    {},
    { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
  );
}

/**
 * A model that routes by a script (JSON completions: the flow's routing calls) and answers streams by the node
 * prompt it is given (`answers`: first line of the node's prompt → text).
 */
function model(routes: string[], answer: (request: StreamRequest) => string = () => 'Sure.') {
  return new FakeLlm([], { fallback: (request) => (request.json ? (routes.shift() ?? '{"edge": null}') : answer(request)) });
}

function flowCall(flow: Flow, llm: FakeLlm, conversation: Record<string, unknown> = {}, engine: Partial<EngineOptions> = {}) {
  const transitions: FlowTransition[] = [];
  const h = setup(flowAgent(flow, conversation), { llm, host: { recordTransition: (t) => void transitions.push(t) }, engine });
  const said = () => h.turns.filter((t) => t.role === 'assistant').map((t) => t.text);
  return { ...h, transitions, said };
}

const qualification: Flow = {
  start: 'greet',
  variables: { budget: 'number' },
  nodes: [
    {
      id: 'greet',
      prompt: 'Ask for their name and budget.',
      edges: [{ to: 'check', when: 'the caller gave a name and a budget', capture: { name: 'string', budget: 'number' } }],
    },
    {
      id: 'check',
      type: 'router',
      edges: [
        { to: 'yes', type: 'expression', expression: { conditions: [{ variable: 'budget', operator: 'gte', value: 1000 }] } },
        { to: 'no', type: 'always' },
      ],
    },
    { id: 'yes', type: 'static', say: 'Thanks {{name}}, a specialist will call you about your {{budget}} dollars.' },
    { id: 'no', type: 'static', say: 'Thanks {{name}}, we will email you.' },
  ],
};

describe('voice engine: conversation flows', () => {
  it('routes a turn, captures typed values, follows the router by expression and says the static close whole, then ends the call', async () => {
    const llm = model(['{"edge": 1, "values": {"name": "Ada", "budget": "2,500"}}']);
    const c = flowCall(qualification, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('I am Ada and I have 2500 dollars.');
    await c.pumpUntil(() => c.hangups.length > 0);

    expect(c.said()).toEqual(['Hello Sam.', 'Thanks Ada, a specialist will call you about your 2500 dollars.']);
    expect(c.hangups).toEqual(['completed']);
    // The whole line is one synthesis (a fixed line), not cut into sentences.
    expect(c.tts[0].syntheses.map((s) => s.request.text)).toContain('Thanks Ada, a specialist will call you about your 2500 dollars.');
    expect(c.transitions.map(({ at_ms: _, ...t }) => t)).toEqual([
      { from: '', to: 'greet', kind: 'start', edge_index: -1 },
      { from: 'greet', to: 'check', kind: 'intent', edge_index: 0, when: 'the caller gave a name and a budget', captured: { name: 'Ada', budget: 2500 } },
      { from: 'check', to: 'yes', kind: 'expression', edge_index: 0 },
    ]);
    expect(c.transitions[1].at_ms).toBeGreaterThan(c.transitions[0].at_ms);
    const routing = llm.requests.find((r) => r.json);
    expect(routing?.messages[1].content).toContain('1. When: the caller gave a name and a budget. Next step: check. Values: name (string), budget (number).');
  });

  it('starts the node’s answer alongside the routing call and keeps it when the flow stays: one answer, no second request', async () => {
    const llm = model(['{"edge": null}'], () => 'What budget do you have in mind?');
    const c = flowCall(qualification, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('Hi, I am Ada.');
    await c.pumpUntil(() => c.said().length === 2);

    expect(llm.requests.map((r) => (r.json ? 'route' : 'answer'))).toEqual(['answer', 'route']);
    expect(llm.requests[0].messages[0]).toEqual({ role: 'system', content: 'You are Ada.\n\nAsk for their name and budget.' });
    expect(c.said()[1]).toBe('What budget do you have in mind?');
  });

  it('drops the early answer when the flow moves, and answers under the new node’s prompt', async () => {
    const flow: Flow = {
      start: 'a',
      nodes: [
        { id: 'a', prompt: 'Node A.', edges: [{ to: 'b', when: 'the caller wants B' }] },
        { id: 'b', prompt: 'Node B.' },
      ],
    };
    const llm = model(['{"edge": 1}'], (r) => (String(r.messages[0].content).includes('Node B.') ? 'This is B.' : 'This is A.'));
    const c = flowCall(flow, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('B please.');
    await c.pumpUntil(() => c.said().length === 2);

    expect(llm.requests.map((r) => (r.json ? 'route' : 'answer'))).toEqual(['answer', 'route', 'answer']);
    expect(llm.requests[0].signal?.aborted).toBe(true);
    expect(c.said()[1]).toBe('This is B.');
  });

  it('asks for a missing capture value instead of moving on', async () => {
    const llm = model(['{"edge": 1, "values": {"name": "Ada"}}']);
    const c = flowCall(qualification, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('I am Ada.');
    await c.pumpUntil(() => c.said().length === 2);

    const answers = llm.requests.filter((r) => !r.json);
    expect(answers.at(-1)?.messages[0].content).toContain('the caller still has to give: budget');
    expect(c.transitions).toHaveLength(1);
  });

  it('moves on an injected event at once, cutting what the agent says, and the new node speaks with the payload in its variables', async () => {
    const flow: Flow = {
      start: 'wait',
      nodes: [
        { id: 'wait', prompt: 'Wait for the payment.', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
        { id: 'paid', type: 'static', say: 'We received {{amount}}, thank you.', edges: [{ to: 'wait', when: 'never' }] },
      ],
    };
    const long = 'Please complete the payment on the link we sent you. ' + 'Take your time, I will wait on the line with you. '.repeat(4);
    const c = flowCall(flow, model([], () => long));
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('Okay, paying now.');
    await c.pumpUntil(() => c.carrier.log.filter((e) => e.kind === 'audio').length > 200);
    const clearsBefore = c.carrier.clears;
    c.engine.injectEvent('payment_received', { amount: '20 dollars' });
    await c.pumpUntil(() => c.said().some((t) => t.startsWith('We received')));

    expect(c.carrier.clears).toBeGreaterThan(clearsBefore);
    expect(c.said().at(-1)).toBe('We received 20 dollars, thank you.');
    expect(c.transitions.at(-1)).toMatchObject({ from: 'wait', to: 'paid', kind: 'event', event: 'payment_received' });
    expect(c.hangups).toEqual([]);
  });

  it('lets an llm node reached by an event speak at once, told of the event', async () => {
    const flow: Flow = {
      start: 'wait',
      nodes: [
        { id: 'wait', edges: [{ to: 'confirm', type: 'event', event: 'approved' }] },
        { id: 'confirm', prompt: 'Tell the caller the loan was approved.' },
      ],
    };
    const llm = model([], () => 'Good news, your loan was approved.');
    const c = flowCall(flow, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    c.engine.injectEvent('approved', {});
    await c.pumpUntil(() => c.said().length === 2);

    expect(c.said()[1]).toBe('Good news, your loan was approved.');
    const request = llm.requests.at(-1);
    expect(request?.messages[0].content).toContain('Tell the caller the loan was approved.');
    expect(request?.messages.at(-1)).toEqual({ role: 'system', content: expect.stringContaining('"approved"') });
  });

  it('forces the node’s tool in the first request on the node, and not once it has run', async () => {
    const flow: Flow = { start: 'look', nodes: [{ id: 'look', prompt: 'Look the order up.', tool: 'lookup', tools: [] }] };
    const llm = new FakeLlm([{ toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }] }, 'I could not find it.', 'Anything else?']);
    const c = flowCall(flow, llm);
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('Where is my order?');
    await c.pumpUntil(() => c.said().length === 2);
    await c.ask('Thanks.');
    await c.pumpUntil(() => c.said().length === 3);

    expect(llm.requests.map((r) => r.toolChoice)).toEqual([{ name: 'lookup' }, undefined, undefined]);
    expect(llm.requests[0].tools?.map((t) => t.name)).toEqual(['record_opt_out', 'lookup']);
  });

  it('resumes on the node it was on after a transfer that did not connect: its prompt, its forced tool not forced again, no move recorded', async () => {
    const flow: Flow = {
      start: 'greet',
      nodes: [
        { id: 'greet', prompt: 'Ask what the caller needs.', edges: [{ to: 'orders', when: 'an order' }] },
        { id: 'orders', prompt: 'Help with the order.', tool: 'lookup', edges: [{ to: 'greet', when: 'something else' }] },
      ],
    };
    const llm = model([], (r) => (String(r.messages[0].content).includes('Help with the order.') ? 'Back to your order.' : 'How can I help?'));
    const resume = { reason: 'transfer_no_answer', turns: [{ role: 'user' as const, text: 'A person about my order, please.' }], node: 'orders' };
    const c = flowCall(flow, llm, {}, { resume });
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 1);
    await c.ask('Where is it then?');
    await c.pumpUntil(() => c.said().length === 2);

    expect(c.said()).toEqual(['I am sorry, I could not reach them. Is there anything else I can help you with?', 'Back to your order.']);
    const answers = llm.requests.filter((r) => !r.json);
    expect(answers.map((r) => r.toolChoice)).toEqual([undefined]);
    expect(answers[0].messages.slice(1).map((m) => m.content)).toEqual([
      'A person about my order, please.',
      'I am sorry, I could not reach them. Is there anything else I can help you with?',
      'Where is it then?',
    ]);
    expect(c.transitions).toEqual([]);
  });

  it('says a static node again after its own quiet time, while the call’s silence timers keep counting', async () => {
    const flow: Flow = { start: 'menu', nodes: [{ id: 'menu', type: 'static', say: 'Say sales or support.', repeat_after_silence_seconds: 4, edges: [{ to: 'menu', when: 'x' }] }] };
    const c = flowCall(flow, model([]), { silence_prompt_seconds: -1, silence_hangup_seconds: 15 });
    void c.engine.start();
    await c.pumpUntil(() => c.said().length === 2);
    await c.pumpUntil(() => c.said().length === 3, 8000);
    await c.pumpUntil(() => c.hangups.length > 0, 20_000);

    expect(c.said().slice(1, 3)).toEqual(['Say sales or support.', 'Say sales or support.']);
    expect(c.hangups).toEqual(['silence']);
    const starts = c.turns.filter((t) => t.text === 'Say sales or support.').map((t) => t.startMs);
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(4000);
  });

  it('synthesizes the static lines known at the start ahead, and leaves those waiting for a captured value', async () => {
    const c = setup(flowAgent(qualification), { llm: model([]), lines: new LineCache() });
    void c.engine.start();
    await c.clock.advance(10_000);
    const texts = c.tts[0].syntheses.map((s) => s.request.text);
    expect(texts).toContain('Hello Sam.');
    expect(texts.some((t) => t.includes('{{'))).toBe(false);
    const withNoValue = flowAgent({ ...qualification, nodes: [...(qualification.nodes ?? []), { id: 'bye', type: 'static', say: 'Goodbye for now.' }] });
    const d = setup(withNoValue, { llm: model([]), lines: new LineCache() });
    void d.engine.start();
    await d.clock.advance(10_000);
    expect(d.tts[0].syntheses.map((s) => s.request.text)).toContain('Goodbye for now.');
  });

  it('ignores events on a call without a flow: nothing said, nothing asked of the model', async () => {
    const logged: string[] = [];
    const c = setup(flowAgent({}), { llm: new FakeLlm(), host: { log: (m) => void logged.push(m) } });
    void c.engine.start();
    await c.clock.advance(3000);
    const before = c.turns.length;
    c.engine.injectEvent('anything', { a: 1 });
    await c.clock.advance(3000);
    expect(c.turns).toHaveLength(before);
    expect(c.llm.requests).toHaveLength(0);
    expect(logged).toContain('event ignored: the agent has no conversation flow');
  });
});
