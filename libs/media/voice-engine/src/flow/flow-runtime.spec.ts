import type { FlowNode, FlowTransition } from '@parley/contracts';
import type { ChatMessage } from '@parley/llm';
import { nodeLine, type AgentFlow, type LanguageSettings } from '../agent-settings';
import { offeredTools, ToolSettings } from '../tools';
import { FlowRuntime } from './flow-runtime';
import { RouteDecision, RouteRequest } from './intent-router';

const english: LanguageSettings = { code: 'en-US', greeting: '', systemPrompt: 'You are Ada.', silencePrompt: '', sttProvider: '', ttsProvider: '', voiceId: '', voices: {} };
const toolSettings: ToolSettings = {
  conversation: true,
  endCall: true,
  callFunctions: true,
  transfer: true,
  maxToolRounds: 3,
  functionNames: [],
  functions: [],
  toolConfigs: [
    { kind: 'custom_function', name: 'lookup', description: 'Look up an order.', request: { url: 'https://api.example.com/orders' } },
    { kind: 'custom_function', name: 'quote', description: 'Quote a price.', request: { url: 'https://api.example.com/quote' } },
  ],
  fillerPhrase: '',
  transferNumber: '',
};

/** A router that answers from a script: the chosen edge by its target, with captured values and what is missing. */
function scripted(...answers: ({ to?: string; captured?: RouteDecision['captured']; missing?: string[] } | Error)[]) {
  const requests: RouteRequest[] = [];
  const route = async (request: RouteRequest): Promise<RouteDecision> => {
    requests.push(request);
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    const choice = request.choices.find((c) => c.edge.to === answer?.to);
    return { choice, captured: answer?.captured ?? {}, missing: answer?.missing ?? [] };
  };
  return { route, requests };
}

function runtime(flow: AgentFlow, options: { route?: ReturnType<typeof scripted>; variables?: Record<string, string> } = {}) {
  const transitions: Omit<FlowTransition, 'at_ms'>[] = [];
  const variables = options.variables ?? {};
  const router = options.route ?? scripted();
  const flowRuntime = new FlowRuntime({ flow, variables, tools: offeredTools(toolSettings), route: router.route, onTransition: (t) => void transitions.push(t) });
  return { flow: flowRuntime, transitions, variables, router };
}

const said: ChatMessage[] = [{ role: 'user', content: 'I am Ada and I can spend two thousand.' }];
const signal = new AbortController().signal;
const moves = (transitions: Omit<FlowTransition, 'at_ms'>[]) => transitions.map((t) => `${t.from || '∅'}→${t.to}:${t.kind}`);

const qualification: AgentFlow = {
  start: 'greet',
  variables: { budget: 'number' },
  nodes: [
    {
      id: 'greet',
      prompt: 'Ask for their name and budget.',
      examples: { en: 'May I have your name and budget?' },
      edges: [
        { to: 'qualify', when: 'the caller gave a name and a budget', capture: { name: 'string', budget: 'number' } },
        { to: 'human', when: 'the caller asks for a person', priority: -1 },
      ],
    },
    {
      id: 'qualify',
      type: 'router',
      edges: [
        { to: 'big', type: 'expression', expression: { conditions: [{ variable: 'budget', operator: 'gte', value: 1000 }] } },
        { to: 'small', type: 'always' },
      ],
    },
    { id: 'big', type: 'static', say: 'Thanks {{name}}, a specialist will call you.' },
    { id: 'small', type: 'static', say: 'Thanks, we will email you.', say_in: { 'fr-FR': 'Merci, nous vous écrirons.' } },
    { id: 'human', type: 'static', say: 'Putting you through.', edges: [{ to: 'greet', type: 'always' }] },
  ],
};

describe('flow runtime', () => {
  describe('opening', () => {
    it('enters the start node, recorded as a start, and lets the caller speak first on an llm node', () => {
      const { flow, transitions } = runtime(qualification);
      expect(flow.start()).toEqual({ kind: 'listen' });
      expect(flow.current.id).toBe('greet');
      expect(transitions).toEqual([{ from: '', to: 'greet', kind: 'start', edge_index: -1 }]);
    });

    it('says a static start node’s line at once', () => {
      const { flow } = runtime({ start: 'hello', nodes: [{ id: 'hello', type: 'static', say: 'Hi!', edges: [{ to: 'hello', type: 'always' }] }] });
      expect(flow.start()).toEqual({ kind: 'say', node: expect.objectContaining({ id: 'hello' }), last: false });
    });

    it('moves a router start on by the variables the call was placed with, before anyone speaks', () => {
      const flow: AgentFlow = {
        start: 'triage',
        nodes: [
          {
            id: 'triage',
            type: 'router',
            edges: [
              { to: 'gold', type: 'expression', expression: { conditions: [{ variable: 'tier', operator: 'eq', value: 'gold' }] } },
              { to: 'normal', type: 'always' },
            ],
          },
          { id: 'gold', type: 'static', say: 'Welcome back, gold member.', edges: [{ to: 'normal', type: 'always' }] },
          { id: 'normal' },
        ],
      };
      const gold = runtime(flow, { variables: { tier: 'gold' } });
      expect(gold.flow.start()).toMatchObject({ kind: 'say', node: { id: 'gold' } });
      expect(moves(gold.transitions)).toEqual(['∅→triage:start', 'triage→gold:expression']);
      const plain = runtime(flow, { variables: { tier: 'silver' } });
      expect(plain.flow.start()).toEqual({ kind: 'listen' });
      expect(moves(plain.transitions)).toEqual(['∅→triage:start', 'triage→normal:always']);
    });
  });

  describe('a caller’s turn', () => {
    it('follows an intent edge with its captures, a router on in the same turn, then says the static line; no edges: the last line', async () => {
      const route = scripted({ to: 'qualify', captured: { name: 'Ada', budget: 2000 } });
      const { flow, transitions, variables } = runtime(qualification, { route });
      flow.start();
      const step = await flow.userTurn(said, signal);
      expect(step).toEqual({ kind: 'say', node: expect.objectContaining({ id: 'big' }), last: true });
      expect(variables).toEqual({ name: 'Ada', budget: '2000' });
      expect(transitions.slice(1)).toEqual([
        { from: 'greet', to: 'qualify', kind: 'intent', edge_index: 0, when: 'the caller gave a name and a budget', captured: { name: 'Ada', budget: 2000 } },
        { from: 'qualify', to: 'big', kind: 'expression', edge_index: 0 },
      ]);
      expect(nodeLine(flow.current, 'en-US')).toBe('Thanks {{name}}, a specialist will call you.');
    });

    it('offers the router the intent edges lowest priority first, with their targets, and the conversation', async () => {
      const route = scripted({});
      const { flow } = runtime(qualification, { route });
      flow.start();
      await flow.userTurn(said, signal);
      const [request] = route.requests;
      expect(request.node.id).toBe('greet');
      expect(request.choices.map((c) => [c.edge.to, c.index, c.target?.id])).toEqual([
        ['human', 1, 'human'],
        ['qualify', 0, 'qualify'],
      ]);
      expect(request.history).toBe(said);
    });

    it('stays when the chosen edge lacks a capture value, and the node’s next answer asks for it', async () => {
      const route = scripted({ to: 'qualify', captured: { name: 'Ada' }, missing: ['budget'] });
      const { flow, transitions, variables } = runtime(qualification, { route });
      flow.start();
      expect(await flow.userTurn(said, signal)).toEqual({ kind: 'answer' });
      expect(flow.current.id).toBe('greet');
      expect(transitions).toHaveLength(1);
      expect(variables).toEqual({});
      expect(flow.instructions(english)).toContain('the caller still has to give: budget');
    });

    it('forgets what the last turn lacked when the next begins, so the early answer is asked under the same prompt', async () => {
      const route = scripted({ to: 'qualify', captured: { name: 'Ada' }, missing: ['budget'] });
      const { flow } = runtime(qualification, { route });
      flow.start();
      await flow.userTurn(said, signal);
      expect(flow.instructions(english)).toContain('still has to give');
      expect(flow.beginTurn()).toBe(true);
      expect(flow.instructions(english)).not.toContain('still has to give');
    });

    it('tries expression edges first (by priority), with no routing call when one holds', async () => {
      const flow: AgentFlow = {
        start: 'a',
        variables: { score: 'number' },
        nodes: [
          {
            id: 'a',
            edges: [
              { to: 'intent', when: 'anything' },
              { to: 'low', type: 'expression', priority: 5, expression: { conditions: [{ variable: 'score', operator: 'gt', value: 1 }] } },
              { to: 'high', type: 'expression', priority: 1, expression: { conditions: [{ variable: 'score', operator: 'gt', value: 5 }] } },
              { to: 'fallback', type: 'always' },
            ],
          },
          { id: 'intent' },
          { id: 'low' },
          { id: 'high' },
          { id: 'fallback' },
        ],
      };
      const route = scripted({ to: 'intent' });
      const { flow: f, transitions } = runtime(flow, { route, variables: { score: '9' } });
      f.start();
      expect(f.beginTurn()).toBe(false);
      await f.userTurn(said, signal);
      expect(f.current.id).toBe('high');
      expect(transitions[1]).toMatchObject({ kind: 'expression', edge_index: 2 });
      expect(route.requests).toHaveLength(0);
    });

    it('takes the always edge when no intent edge fires, and when routing fails', async () => {
      const flow: AgentFlow = { start: 'a', nodes: [{ id: 'a', edges: [{ to: 'b', when: 'wants b' }, { to: 'c', type: 'always' }] }, { id: 'b' }, { id: 'c' }] };
      const none = runtime(flow, { route: scripted({}) });
      none.flow.start();
      await none.flow.userTurn(said, signal);
      expect(none.flow.current.id).toBe('c');
      const failing = runtime(flow, { route: scripted(new Error('model down')) });
      failing.flow.start();
      await failing.flow.userTurn(said, signal);
      expect(failing.flow.current.id).toBe('c');
    });

    it('lets the llm node answer when nothing fires, and says a static node’s line again', async () => {
      const flow: AgentFlow = {
        start: 'ask',
        nodes: [
          { id: 'ask', type: 'static', say: 'Say yes or no.', edges: [{ to: 'chat', when: 'yes or no' }] },
          { id: 'chat', edges: [{ to: 'ask', when: 'wants to start over' }] },
        ],
      };
      const { flow: f } = runtime(flow, { route: scripted({}, { to: 'chat' }, {}) });
      f.start();
      expect(await f.userTurn(said, signal)).toMatchObject({ kind: 'say', node: { id: 'ask' }, last: false });
      expect(await f.userTurn(said, signal)).toEqual({ kind: 'answer' });
      expect(await f.userTurn(said, signal)).toEqual({ kind: 'answer' });
      expect(f.current.id).toBe('chat');
    });

    it('stops following routers that point at each other instead of looping', async () => {
      const flow: AgentFlow = {
        start: 'a',
        nodes: [
          { id: 'a', type: 'router', edges: [{ to: 'b', type: 'always' }] },
          { id: 'b', type: 'router', edges: [{ to: 'a', type: 'always' }] },
        ],
      };
      const { flow: f, transitions } = runtime(flow);
      expect(f.start()).toEqual({ kind: 'listen' });
      expect(transitions.length).toBeLessThan(40);
      expect(await f.userTurn(said, signal)).toEqual({ kind: 'answer' });
    });

    it('gives up a turn whose routing an injected event overtook', async () => {
      let release: (d: RouteDecision) => void = () => undefined;
      const flow: AgentFlow = { start: 'a', nodes: [{ id: 'a', edges: [{ to: 'b', when: 'b' }, { to: 'c', type: 'event', event: 'go' }] }, { id: 'b' }, { id: 'c' }] };
      const f = new FlowRuntime({ flow, variables: {}, tools: [], route: () => new Promise((r) => (release = r)), onTransition: () => undefined });
      f.start();
      const turn = f.userTurn(said, signal);
      f.event('go', {});
      release({ choice: { edge: flow.nodes[0].edges![0], index: 0, target: flow.nodes[1] }, captured: {}, missing: [] });
      expect(await turn).toEqual({ kind: 'none' });
      expect(f.current.id).toBe('c');
    });
  });

  describe('events', () => {
    const flow: AgentFlow = {
      start: 'wait',
      nodes: [
        { id: 'wait', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }, { to: 'confirm', type: 'always' }] },
        { id: 'confirm', type: 'router', edges: [{ to: 'shipped', type: 'event', event: 'shipped' }] },
        { id: 'paid', type: 'static', say: 'We received {{amount}}.', edges: [{ to: 'wait', when: 'more' }] },
        { id: 'shipped', edges: [] },
      ],
    };

    it('fires the current node’s event edge at once, the payload’s fields becoming variables by dotted path', () => {
      const { flow: f, transitions, variables } = runtime(flow);
      f.start();
      expect(f.event('payment_received', { amount: '20 dollars', order: { id: 7, tags: ['a'] } })).toMatchObject({ kind: 'say', node: { id: 'paid' } });
      expect(variables).toEqual({ amount: '20 dollars', 'order.id': '7', 'order.tags': '["a"]' });
      expect(transitions[1]).toEqual({ from: 'wait', to: 'paid', kind: 'event', edge_index: 0, event: 'payment_received' });
    });

    it('keeps an event no edge waits for, and fires it once when the flow reaches a node that waits for it', async () => {
      const { flow: f, transitions } = runtime(flow, { route: scripted() });
      f.start();
      expect(f.event('shipped', {})).toBeUndefined();
      await f.userTurn(said, signal); // wait → confirm (always) → shipped at once, by the kept event
      expect(f.current.id).toBe('shipped');
      expect(moves(transitions).slice(1)).toEqual(['wait→confirm:always', 'confirm→shipped:event']);
      expect(transitions[2].event).toBe('shipped');
    });

    it('keeps an event that comes before the flow starts (during the greeting) for the start: the start is recorded first, the event then fires', () => {
      const { flow: f, transitions, variables } = runtime(flow);
      expect(f.event('payment_received', { amount: '20 dollars' })).toBeUndefined();
      expect(transitions).toEqual([]);
      expect(variables).toEqual({ amount: '20 dollars' });
      expect(f.start()).toMatchObject({ kind: 'say', node: { id: 'paid' } });
      expect(moves(transitions)).toEqual(['∅→wait:start', 'wait→paid:event']);
    });

    it('lets an llm node an early event leads to speak as soon as the flow starts', () => {
      const { flow: f, transitions } = runtime({
        start: 'wait',
        nodes: [{ id: 'wait', edges: [{ to: 'thank', type: 'event', event: 'paid' }] }, { id: 'thank', prompt: 'Thank the caller.' }],
      });
      f.event('paid', {});
      expect(f.start()).toEqual({ kind: 'answer' });
      expect(moves(transitions)).toEqual(['∅→wait:start', 'wait→thank:event']);
    });
  });

  describe('resuming after a transfer that did not connect', () => {
    const billing: AgentFlow = {
      start: 'greet',
      nodes: [
        { id: 'greet', prompt: 'Ask what the caller needs.', edges: [{ to: 'billing', when: 'a bill' }] },
        {
          id: 'billing',
          prompt: 'Put the caller through to billing.',
          tool: 'lookup',
          edges: [
            { to: 'paid', type: 'event', event: 'payment_received' },
            { to: 'greet', when: 'something else' },
          ],
        },
        { id: 'paid', type: 'static', say: 'We received it.', edges: [] },
      ],
    };

    it('is on the node it was on, with no move recorded, its forced tool not forced again, and routes from its edges', async () => {
      const { flow: f, transitions, router } = runtime(billing, { route: scripted({ to: 'greet' }) });
      expect(f.resume('billing')).toEqual({ kind: 'listen' });
      expect(f.current.id).toBe('billing');
      expect(transitions).toEqual([]);
      expect(f.instructions(english)).toBe('You are Ada.\n\nPut the caller through to billing.');
      expect(f.toolChoice()).toBeUndefined();
      await f.userTurn(said, signal);
      expect(router.requests[0].node.id).toBe('billing');
      expect(moves(transitions)).toEqual(['billing→greet:intent']);
      // Entered by a move, the node forces it.
      const entered = runtime(billing, { route: scripted({ to: 'billing' }) });
      entered.flow.start();
      await entered.flow.userTurn(said, signal);
      expect(entered.flow.toolChoice()).toEqual({ name: 'lookup' });
    });

    it('fires an event kept meanwhile when the node waits for it, and takes events at once after', () => {
      const early = runtime(billing);
      expect(early.flow.event('payment_received', {})).toBeUndefined();
      expect(early.flow.resume('billing')).toMatchObject({ kind: 'say', node: { id: 'paid' } });
      expect(moves(early.transitions)).toEqual(['billing→paid:event']);
      const late = runtime(billing);
      late.flow.resume('billing');
      expect(late.flow.event('payment_received', {})).toMatchObject({ kind: 'say', node: { id: 'paid' } });
    });

    it('starts again, recorded as a start, when the flow no longer has the node', () => {
      const { flow: f, transitions } = runtime(billing);
      expect(f.resume('gone')).toEqual({ kind: 'listen' });
      expect(f.current.id).toBe('greet');
      expect(moves(transitions)).toEqual(['∅→greet:start']);
    });
  });

  describe('the node as the dialogue', () => {
    const flow: AgentFlow = {
      start: 'a',
      nodes: [
        { id: 'a', prompt: 'Collect the order number.', examples: { 'en-GB': 'Could I have your order number?' }, edges: [{ to: 'b', type: 'always' }] },
        { id: 'b', tools: [], edges: [{ to: 'c', type: 'always' }] },
        { id: 'c', tools: ['quote'], tool: 'lookup', edges: [{ to: 'a', type: 'always' }] },
      ],
    };
    const names = (f: FlowRuntime) => f.tools().map((t) => t.definition.name);

    it('answers under the agent’s prompt, the node’s prompt and its example in the language (or its base)', () => {
      const { flow: f } = runtime(flow);
      f.start();
      expect(f.instructions(english)).toBe('You are Ada.\n\nCollect the order number.\n\nExample of a reply at this step: Could I have your order number?');
    });

    it('shows all the agent’s tools when the node lists none, only the opt-out when the list is empty, and the forced tool with the listed ones', async () => {
      const { flow: f } = runtime(flow);
      f.start();
      expect(names(f)).toEqual(['end_call', 'record_opt_out', 'lookup', 'quote']);
      await f.userTurn(said, signal);
      expect(names(f)).toEqual(['record_opt_out']);
      await f.userTurn(said, signal);
      expect(names(f)).toEqual(['record_opt_out', 'lookup', 'quote']);
    });

    it('forces the node’s tool until it has run once per visit', async () => {
      const { flow: f } = runtime(flow);
      f.start();
      expect(f.toolChoice()).toBeUndefined();
      await f.userTurn(said, signal);
      await f.userTurn(said, signal);
      expect(f.toolChoice()).toEqual({ name: 'lookup' });
      f.toolRan('quote');
      expect(f.toolChoice()).toEqual({ name: 'lookup' });
      f.toolRan('lookup');
      expect(f.toolChoice()).toBeUndefined();
      for (let i = 0; i < 3; i++) await f.userTurn(said, signal); // c → a → b → c: a new visit
      expect(f.toolChoice()).toEqual({ name: 'lookup' });
    });

    it('does not force a tool the agent does not offer', () => {
      const node: FlowNode = { id: 'x', tool: 'transfer_call' };
      const { flow: f } = runtime({ start: 'x', nodes: [node] });
      f.start();
      expect(f.toolChoice()).toBeUndefined();
    });

    it('starts the answer early only on an llm node with intent edges and no expression holding', () => {
      const { flow: f } = runtime(qualification);
      f.start();
      expect(f.beginTurn()).toBe(true);
      const still = runtime(flow);
      still.flow.start();
      expect(still.flow.beginTurn()).toBe(false);
    });

    it('reads a static line in the call’s language, by exact code, then base language, then `say`', () => {
      const small = qualification.nodes[3];
      expect(nodeLine(small, 'fr-FR')).toBe('Merci, nous vous écrirons.');
      expect(nodeLine(small, 'fr-CA')).toBe('Merci, nous vous écrirons.');
      expect(nodeLine(small, 'de-DE')).toBe('Thanks, we will email you.');
    });

    it('re-prompts after the node’s own quiet time, and never on 0', () => {
      const { flow: f } = runtime({ start: 'a', nodes: [{ id: 'a', repeat_after_silence_seconds: 6 }] });
      expect(f.repeatSeconds()).toBe(6);
      const { flow: g } = runtime({ start: 'a', nodes: [{ id: 'a', repeat_after_silence_seconds: 0 }] });
      expect(g.repeatSeconds()).toBeUndefined();
    });
  });
});
