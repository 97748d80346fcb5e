import type { CaptureType, FlowEdge, FlowNode } from '@parley/contracts';
import type { ChatMessage, LlmProvider } from '@parley/llm';
import { boolean, number } from './conditions';

export type Captured = Record<string, string | number | boolean>;

/** One intent edge as the router sees it: the edge, its target node, and its position among the node's edges. */
export interface IntentChoice {
  edge: FlowEdge;
  index: number;
  target: FlowNode | undefined;
}

export interface RouteRequest {
  node: FlowNode;
  /** The node's intent edges, lowest priority first: the order the router is told to prefer. */
  choices: IntentChoice[];
  /** The conversation so far, the caller's last words included. */
  history: ChatMessage[];
  signal: AbortSignal;
}

/**
 * The router's verdict: the chosen edge (absent: none applies) and what it captured, typed; `missing` names the
 * capture values the chosen edge still lacks (it then does not fire).
 */
export interface RouteDecision {
  choice?: IntentChoice;
  captured: Captured;
  missing: string[];
}

/** Decides between intent edges (the flow's routing model call); a scripted one in tests. */
export type IntentRouter = (request: RouteRequest) => Promise<RouteDecision>;

export const BUILT_IN_ROUTING_INSTRUCTIONS = [
  'You follow a phone conversation that runs on a script of steps, and decide whether it should move on from the current step.',
  "Read the conversation and the caller's last words, then choose the one numbered transition whose condition the caller's words clearly meet now.",
  'When several apply, choose the lowest number. When none clearly applies, choose none: the conversation then stays on the current step.',
  'For the chosen transition, give each value it asks for, taken from what the caller said anywhere in the conversation, with the type asked; leave out a value the caller has not given. Never guess a value.',
].join(' ');

const FORMAT =
  'Answer with one JSON object and nothing else: {"edge": <the number of the transition, or null>, "values": {<name>: <value>, ...}}. ' +
  'Write numbers as JSON numbers in digits (fifteen thousand dollars: 15000) and yes/no values as true or false.';

/** Messages of the conversation the router reads: the last few, enough to find values given earlier. */
const HISTORY_MESSAGES = 12;
const NODE_TEXT = 400;

/**
 * The routing model call: one JSON completion with the routing model (`flow.routing.model`, else the agent's),
 * under `flow.routing.instructions` or the built-in ones. Its answer is checked: an edge number outside the list is
 * no edge; each capture value is typed (`number` and `integer` accept a number or its text, `boolean` true/false
 * or yes/no, `string` any non-empty text) and dropped when it does not fit.
 */
export function modelRouter(llm: LlmProvider, options: { model: string; instructions?: string; log?: (m: string, f?: Record<string, unknown>) => void }): IntentRouter {
  return async (request) => {
    const result = await llm.complete({
      model: options.model,
      messages: routingMessages(request, options.instructions),
      json: true,
      temperature: 0,
      maxTokens: 300,
      signal: request.signal,
    });
    return readDecision(result.text, request.choices, options.log);
  };
}

/** The routing prompt: instructions and format, then the current step, the numbered transitions and the conversation. */
export function routingMessages(request: RouteRequest, instructions?: string): ChatMessage[] {
  const { node, choices } = request;
  const lines = [`Current step: ${node.id}${about(node) ? ` (${about(node)})` : ''}`, '', 'Transitions:'];
  choices.forEach((c, i) => {
    const target = c.target ? `${c.target.id}${about(c.target) ? ` (${about(c.target)})` : ''}` : c.edge.to;
    const capture = Object.entries(c.edge.capture ?? {});
    lines.push(
      `${i + 1}. When: ${c.edge.when || `the caller wants ${c.edge.to}`}. Next step: ${target}.` +
        (capture.length ? ` Values: ${capture.map(([name, type]) => `${name} (${type})`).join(', ')}.` : ''),
    );
  });
  lines.push('', 'Conversation (most recent last):');
  for (const m of request.history.slice(-HISTORY_MESSAGES)) {
    if ((m.role === 'user' || m.role === 'assistant') && m.content) lines.push(`${m.role === 'user' ? 'Caller' : 'Agent'}: ${m.content}`);
  }
  return [
    { role: 'system', content: `${instructions?.trim() || BUILT_IN_ROUTING_INSTRUCTIONS}\n\n${FORMAT}` },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** The router's answer, checked against the choices offered; anything unreadable is "no edge". */
export function readDecision(text: string, choices: IntentChoice[], log?: (m: string, f?: Record<string, unknown>) => void): RouteDecision {
  const none: RouteDecision = { captured: {}, missing: [] };
  let answer: { edge?: unknown; values?: unknown };
  try {
    answer = parseObject(text) as typeof answer;
  } catch {
    log?.('routing answer unreadable', { answer: text.slice(0, 200) });
    return none;
  }
  const position = typeof answer?.edge === 'number' ? answer.edge : number(answer?.edge);
  const choice = position !== undefined && Number.isInteger(position) ? choices[position - 1] : undefined;
  if (!choice) return none;
  // Some models put the values beside "edge" instead of under "values": read them there too.
  const values = answer.values && typeof answer.values === 'object' ? (answer.values as Record<string, unknown>) : (answer as Record<string, unknown>);
  const captured: Captured = {};
  const missing: string[] = [];
  for (const [name, type] of Object.entries(choice.edge.capture ?? {})) {
    const value = typed(values[name], type);
    if (value === undefined) missing.push(name);
    else captured[name] = value;
  }
  return { choice, captured, missing };
}

/**
 * The answer's JSON object: the whole text (code fences aside); else, as servers that ignore `response_format` and
 * reasoning models answer, the object after a `<think>` block or a sentence: from the first `{` to the last `}`.
 */
function parseObject(text: string): unknown {
  const bare = text.trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
  try {
    return JSON.parse(bare);
  } catch (error) {
    const rest = bare.replace(/<think>[\s\S]*?<\/think>/g, '');
    const from = rest.indexOf('{');
    const to = rest.lastIndexOf('}');
    if (from < 0 || to < from) throw error;
    return JSON.parse(rest.slice(from, to + 1));
  }
}

function typed(value: unknown, type: CaptureType): string | number | boolean | undefined {
  if (value === null || value === undefined) return undefined;
  if (type === 'number') return number(value);
  if (type === 'integer') {
    const n = number(value);
    return n !== undefined && Number.isInteger(n) ? n : undefined;
  }
  if (type === 'boolean') return boolean(value);
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
  return text || undefined;
}

function about(node: FlowNode): string {
  const text = (node.description || node.prompt || '').replace(/\s+/g, ' ').trim();
  return text.length > NODE_TEXT ? `${text.slice(0, NODE_TEXT)}…` : text;
}
