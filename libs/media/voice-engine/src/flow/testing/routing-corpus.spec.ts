import type { CaptureType } from '@parley/contracts';
import { FakeLlm, StreamRequest } from '@parley/llm';
import type { AgentFlow, LanguageSettings } from '../../agent-settings';
import { BUILT_IN_ROUTING_INSTRUCTIONS, IntentChoice, readDecision } from '../intent-router';
import { Difficulty, historyOf, ROUTING_CORPUS, ROUTING_FLOWS, RoutingCase } from './routing-corpus';
import { captureTypes, expectedCaptured, hasType, promptLines, runCase, score } from './route-case';

// The routing call's mechanics over the whole corpus: a fake model that reads the prompt it is actually sent and
// answers like a model that understood the labels (it finds the expected step among the numbered transitions and
// gives the expected values), in the shapes real models answer in. Whether a real model understands them is the
// live check's question (npm run check:routing).

/** How the fake model words its answer; the cases take them in turn. */
const SHAPES = ['plain', 'as-text', 'fenced', 'extra-keys', 'spoken', 'nulls'] as const;
type Shape = (typeof SHAPES)[number];

const ENGLISH: LanguageSettings = { code: 'en-US', greeting: '', systemPrompt: 'You are a helpful agent.', silencePrompt: '', sttProvider: 'fake', ttsProvider: 'fake', voiceId: '', voices: {} };

/** The user message's numbered transitions: the target step's id → its number. */
function transitions(request: StreamRequest): Map<string, number> {
  const prompt = request.messages.find((m) => m.role === 'user')?.content ?? '';
  const section = prompt.split('\nTransitions:\n')[1]?.split('\n\n')[0] ?? '';
  const lines = new Map<string, number>();
  for (const line of section.split('\n')) {
    const m = /^(\d+)\. When: .*? Next step: ([A-Za-z0-9_-]+)/.exec(line);
    if (m) lines.set(m[2], Number(m[1]));
  }
  return lines;
}

/** A model that understood: the expected step's number (read from the prompt) and values, worded as `shape`. */
function understood(c: RoutingCase, shape: Shape) {
  return (request: StreamRequest): string => {
    const edge = c.to ? transitions(request).get(c.to) : null;
    if (edge === undefined) throw new Error(`the prompt lists no transition to ${c.to}`);
    const values: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(expectedCaptured(c))) {
      if (shape === 'as-text') values[name] = String(value);
      else if (shape === 'spoken' && typeof value === 'boolean') values[name] = value ? 'Yes' : 'no';
      else if (shape === 'spoken' && typeof value === 'number') values[name] = value.toLocaleString('en-US');
      else values[name] = value;
    }
    for (const name of c.missing ?? []) {
      if (shape === 'nulls') values[name] = null;
      else if (shape === 'spoken') values[name] = '';
    }
    const answer = { edge: shape === 'as-text' && edge !== null ? String(edge) : edge, values: shape === 'nulls' && !Object.keys(values).length ? null : values };
    switch (shape) {
      case 'fenced':
        return '```json\n' + JSON.stringify(answer, null, 2) + '\n```';
      case 'extra-keys':
        return JSON.stringify({ reasoning: `The caller said: ${c.said}`, ...answer, confidence: 0.87 }, null, 2);
      default:
        return `\n${JSON.stringify(answer)}\n`;
    }
  };
}

function nodeOf(c: Pick<RoutingCase, 'flow' | 'node'>) {
  return (ROUTING_FLOWS[c.flow] as AgentFlow).nodes.find((n) => n.id === c.node);
}

describe('the routing corpus', () => {
  it('holds at least 50 utterances, each on a node with intent edges, expecting one of them or none', () => {
    expect(ROUTING_CORPUS.length).toBeGreaterThanOrEqual(50);
    expect(new Set(ROUTING_CORPUS.map((c) => c.id)).size).toBe(ROUTING_CORPUS.length);
    for (const c of ROUTING_CORPUS) {
      const intents = (nodeOf(c)?.edges ?? []).filter((e) => (e.type ?? 'intent') === 'intent');
      expect(intents.length).toBeGreaterThan(0);
      // An edge is found back by its target: one intent edge per target on a node.
      expect(new Set(intents.map((e) => e.to)).size).toBe(intents.length);
      if (c.to) expect(intents.map((e) => e.to)).toContain(c.to);
      for (const other of c.also ?? []) expect(intents.map((e) => e.to)).toContain(other);
    }
  });

  it('expects every value its edge captures, typed as declared, unless the case says it is missing', () => {
    for (const c of ROUTING_CORPUS.filter((k) => k.to)) {
      const types = captureTypes(c);
      const given = expectedCaptured(c);
      for (const [name, value] of Object.entries(given)) expect([c.id, name, hasType(value, types[name])]).toEqual([c.id, name, true]);
      expect([c.id, [...Object.keys(given), ...(c.missing ?? [])].sort()]).toEqual([c.id, Object.keys(types).sort()]);
    }
    for (const c of ROUTING_CORPUS.filter((k) => !k.to)) expect([c.id, c.captured, c.missing]).toEqual([c.id, undefined, undefined]);
  });

  it('has hard cases of every kind: no edge, priority, a value given earlier, a missing value, numbers in words, yes/no', () => {
    const kinds: Difficulty[] = ['no-edge', 'priority', 'earlier-value', 'missing', 'number-words', 'boolean'];
    for (const kind of kinds) expect([kind, ROUTING_CORPUS.filter((c) => c.hard?.includes(kind)).length >= 3]).toEqual([kind, true]);
    // A value said in an earlier turn is not in the last words.
    for (const c of ROUTING_CORPUS.filter((k) => k.hard?.includes('earlier-value'))) expect(c.before?.some((m) => m.role === 'user')).toBe(true);
  });
});

describe('a model that understood the labels routes every utterance of the corpus', () => {
  const cases = ROUTING_CORPUS.map((c, i) => [c.id, c.to ?? 'stays', SHAPES[i % SHAPES.length], c] as const);

  it.each(cases)('%s → %s (answer worded %s)', async (_id, _to, shape, c) => {
    const llm = new FakeLlm([understood(c, shape)]);
    const out = await runCase(c, llm, 'router-model');
    const node = nodeOf(c);

    // One JSON completion per turn, with the routing model, carrying the conversation.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]).toMatchObject({ model: 'router-model', json: true, temperature: 0 });
    const prompt = llm.requests[0].messages[1].content;
    expect(prompt.endsWith(`\nCaller: ${c.said}`)).toBe(true);
    for (const line of promptLines(historyOf(c))) expect(prompt).toContain(line);

    // Priority: the expected transition is listed before every other one that plausibly applies.
    const numbers = transitions(llm.requests[0]);
    for (const other of c.also ?? []) expect(numbers.get(c.to as string)).toBeLessThan(numbers.get(other) as number);

    const d = out.decision;
    if (!c.to) {
      expect(d?.choice).toBeUndefined();
      expect(out.moves).toEqual([]);
      expect(out.runtime.current.id).toBe(c.node);
      return;
    }
    // The number the model gave maps back to the edge's own position among the node's edges.
    const index = (node?.edges ?? []).findIndex((e) => (e.type ?? 'intent') === 'intent' && e.to === c.to);
    expect(d?.choice?.index).toBe(index);
    expect(d?.choice?.edge.to).toBe(c.to);
    expect(d?.captured).toEqual(expectedCaptured(c));

    if (c.missing?.length) {
      // The edge is chosen but waits: the flow stays and the node's next answer asks for what is missing.
      expect([...(d?.missing ?? [])].sort()).toEqual([...c.missing].sort());
      expect(out.moves).toEqual([]);
      expect(out.runtime.current.id).toBe(c.node);
      expect(out.runtime.instructions(ENGLISH)).toContain(`the caller still has to give: ${d?.missing.join(', ')}`);
      return;
    }
    expect(d?.missing).toEqual([]);
    const captured = expectedCaptured(c);
    expect(out.moves[0]).toEqual({
      from: c.node,
      to: c.to,
      kind: 'intent',
      edge_index: index,
      ...(node?.edges?.[index].when ? { when: node.edges[index].when } : {}),
      ...(Object.keys(captured).length ? { captured } : {}),
    });
    // Captured values become call variables (as text), which expression edges then read by their declared type.
    for (const [name, value] of Object.entries(captured)) expect(out.variables[name]).toBe(String(value));
    if (c.flow === 'confirmation' && c.to === 'answered') expect(out.moves[1]).toMatchObject({ from: 'answered', to: captured.confirmed ? 'booked' : 'fix', kind: captured.confirmed ? 'expression' : 'always' });
  });
});

describe('the routing prompt', () => {
  const triage = ROUTING_CORPUS.find((c) => c.id === 'support-cancel-over-charge') as RoutingCase;
  const booking = ROUTING_CORPUS.find((c) => c.id === 'booking-twelve-birthday') as RoutingCase;

  it('numbers the transitions lowest priority first, equal priorities in the order written', async () => {
    const llm = new FakeLlm(['{"edge": null}']);
    await runCase(triage, llm);
    // triage's edges: billing (2), technical (2), cancel (1), person (0).
    expect([...transitions(llm.requests[0]).entries()]).toEqual([
      ['person', 1],
      ['cancel', 2],
      ['billing', 3],
      ['technical', 4],
    ]);
  });

  it("describes each transition by its condition, its target step and the values it asks for, with their types", async () => {
    const llm = new FakeLlm(['{"edge": null}']);
    await runCase(booking, llm);
    const prompt = llm.requests[0].messages[1].content;
    expect(prompt).toContain('Current step: ask_booking (Take a table booking');
    expect(prompt).toContain('1. When: the booking is for more than eight people. Next step: large_party. Values: party_size (integer).');
    expect(prompt).toContain('Values: date (string), party_size (integer).');
  });

  it("holds the earlier turns where a value was given, and ends with the caller's last words", async () => {
    const earlier = ROUTING_CORPUS.find((c) => c.id === 'budget-grand-earlier') as RoutingCase;
    const llm = new FakeLlm(['{"edge": null}']);
    await runCase(earlier, llm);
    const conversation = llm.requests[0].messages[1].content.split('Conversation (most recent last):\n')[1];
    expect(conversation.split('\n')).toEqual(promptLines(historyOf(earlier)));
    expect(conversation).toContain('Caller: Maybe twelve grand?');
  });

  it('uses the flow’s routing.instructions instead of the built-in ones, and keeps the answer format', async () => {
    const own = new FakeLlm(['{"edge": null}']);
    await runCase(triage, own);
    const system = own.requests[0].messages[0];
    expect(system.role).toBe('system');
    expect(system.content.startsWith(ROUTING_FLOWS.support.routing.instructions)).toBe(true);
    expect(system.content).not.toContain(BUILT_IN_ROUTING_INSTRUCTIONS);
    expect(system.content).toContain('Answer with one JSON object and nothing else: {"edge": <the number of the transition, or null>');

    const builtIn = new FakeLlm(['{"edge": null}']);
    await runCase(booking, builtIn);
    expect(builtIn.requests[0].messages[0].content).toBe(`${BUILT_IN_ROUTING_INSTRUCTIONS}\n\n${system.content.split('\n\n').at(-1)}`);
  });
});

describe("reading the routing model's answer", () => {
  /** The intent choices of a corpus node, in the order the prompt numbers them. */
  function choicesOf(flow: keyof typeof ROUTING_FLOWS, node: string): IntentChoice[] {
    const n = nodeOf({ flow, node });
    return (n?.edges ?? [])
      .map((edge, index) => ({ edge, index, target: undefined }))
      .filter(({ edge }) => (edge.type ?? 'intent') === 'intent')
      .sort((a, b) => (a.edge.priority ?? 0) - (b.edge.priority ?? 0) || a.index - b.index);
  }
  const qualify = choicesOf('qualification', 'qualify'); // 1 not_interested, 2 book_visit (budget number, email)
  const booking = choicesOf('booking', 'ask_booking'); // 1 large_party (party_size integer), 2 confirm_booking, 3 opening_hours
  const confirm = choicesOf('confirmation', 'confirm'); // 1 person, 2 answered (confirmed boolean)
  const typeOf = (value: unknown) => typeof value;

  it('takes a number given as a JSON number, as text, or with thousands separators, and keeps it a number', () => {
    for (const budget of [15000, '15000', '15,000', ' 15000 ', 15000.0]) {
      const d = readDecision(JSON.stringify({ edge: 2, values: { budget, email: 'a@b.co' } }), qualify);
      expect([budget, d.captured.budget, typeOf(d.captured.budget), d.missing]).toEqual([budget, 15000, 'number', []]);
    }
  });

  it('takes an integer for an integer capture and refuses 2.5: the edge then waits for it', () => {
    expect(readDecision('{"edge": 1, "values": {"party_size": "12"}}', booking)).toMatchObject({ captured: { party_size: 12 }, missing: [] });
    const half = readDecision('{"edge": 1, "values": {"party_size": 2.5}}', booking);
    expect(half.choice?.edge.to).toBe('large_party');
    expect(half).toMatchObject({ captured: {}, missing: ['party_size'] });
  });

  it('reads yes and no, true and false, in any case, as booleans; other words are no answer', () => {
    const cases: [unknown, boolean | undefined][] = [[true, true], [false, false], ['yes', true], ['No', false], ['TRUE', true], ['false', false], ['maybe', undefined], ['yeah', undefined], [1, undefined]];
    for (const [said, want] of cases) {
      const d = readDecision(JSON.stringify({ edge: 2, values: { confirmed: said } }), confirm);
      expect([said, d.captured.confirmed, d.missing]).toEqual([said, want, want === undefined ? ['confirmed'] : []]);
    }
  });

  it('counts a value left out, null or empty as missing, so the chosen edge does not fire', () => {
    for (const values of [{}, { email: null }, { email: '' }, { email: '   ' }]) {
      const d = readDecision(JSON.stringify({ edge: 2, values: { budget: 9000, ...values } }), qualify);
      expect(d).toMatchObject({ captured: { budget: 9000 }, missing: ['email'] });
      expect(d.choice?.edge.to).toBe('book_visit');
    }
    expect(readDecision('{"edge": 2, "values": null}', qualify).missing.sort()).toEqual(['budget', 'email']);
  });

  it('ignores code fences, surrounding whitespace and keys it does not know', () => {
    const answers = [
      '```json\n{"edge": 3}\n```',
      '```\n{"edge": 3}\n```',
      '  \n{"edge": 3, "values": {}}\n ',
      '{"reasoning": "asks about parking", "edge": 3, "values": {}, "confidence": 0.9}',
    ];
    for (const answer of answers) expect([answer, readDecision(answer, booking).choice?.edge.to]).toEqual([answer, 'opening_hours']);
  });

  it('reads values the model put beside "edge" instead of under "values"', () => {
    const decision = readDecision('{"edge": 2, "budget": "15,000", "email": "sam@example.com"}', qualify);
    expect(decision.choice?.edge.to).toBe('book_visit');
    expect(decision.captured).toEqual({ budget: 15000, email: 'sam@example.com' });
    expect(decision.missing).toEqual([]);
  });

  it("finds the object after a reasoning model's <think> block or a sentence before it", () => {
    const answers = ['<think>\nThe caller asks about parking: {maybe 3}.\n</think>\n\n{"edge": 3, "values": {}}', 'Here is my answer: {"edge": 3, "values": {}}'];
    for (const answer of answers) expect([answer, readDecision(answer, booking).choice?.edge.to]).toEqual([answer, 'opening_hours']);
  });

  it('stays when the edge is null, out of the list, zero, fractional, not a number, or the answer is not JSON', () => {
    for (const answer of ['{"edge": null, "values": {}}', '{"edge": 4}', '{"edge": 0}', '{"edge": -1}', '{"edge": 1.5}', '{"edge": "none"}', '{}', 'null', 'I am not sure.', '']) {
      expect([answer, readDecision(answer, booking)]).toEqual([answer, { captured: {}, missing: [] }]);
    }
  });

  it('does not take a number the model wrote in words, nor with a unit: the edge waits for it (the prompt asks for the type)', () => {
    for (const budget of ['fifteen thousand', '15k', '$15000']) {
      const d = readDecision(JSON.stringify({ edge: 2, values: { budget, email: 'a@b.co' } }), qualify);
      expect([budget, d.missing]).toEqual([budget, ['budget']]);
    }
  });

  it('gives text captures as trimmed text, and a number or boolean given for text as its text', () => {
    const d = readDecision('{"edge": 2, "values": {"date": " Friday ", "party_size": 4}}', booking);
    expect(d.captured).toEqual({ date: 'Friday', party_size: 4 });
    const types: Record<string, CaptureType> = { date: 'string', party_size: 'integer' };
    for (const [name, value] of Object.entries(d.captured)) expect(hasType(value, types[name])).toBe(true);
    expect(readDecision('{"edge": 2, "values": {"date": 20, "party_size": 4}}', booking).captured.date).toBe('20');
  });
});

describe('the live check scores an outcome', () => {
  it('counts the edge right only when the flow did what was expected, and values right only when typed and matching', async () => {
    const c = ROUTING_CORPUS.find((k) => k.id === 'budget-without-email') as RoutingCase;
    const right = await runCase(c, new FakeLlm(['{"edge": 2, "values": {"budget": 25000}}']));
    expect(score(c, right)).toEqual({ edge: true, values: true, got: 'book_visit {"budget":25000} missing [email]' });
    const asText = await runCase(c, new FakeLlm(['{"edge": 2, "values": {"budget": 25000, "email": "unknown"}}']));
    expect(score(c, asText).edge).toBe(false);
    const stays = await runCase(c, new FakeLlm(['{"edge": null}']));
    expect(score(c, stays)).toMatchObject({ edge: false, got: 'stays' });
    const failed = await runCase(c, new FakeLlm([new Error('connection refused')]));
    expect(score(c, failed)).toEqual({ edge: false, values: false, got: 'error: Error: connection refused' });
    // A failed call is a miss even where staying was expected.
    const none = ROUTING_CORPUS.find((k) => k.id === 'support-weather') as RoutingCase;
    expect(score(none, await runCase(none, new FakeLlm([new Error('timeout')]))).edge).toBe(false);
    expect(score(none, await runCase(none, new FakeLlm(['{"edge": null}'])))).toEqual({ edge: true, values: true, got: 'stays' });
  });
});
