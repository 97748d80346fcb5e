import type { CaptureType, FlowTransition } from '@parley/contracts';
import type { ChatMessage, CompletionRequest, LlmProvider } from '@parley/llm';
import type { AgentFlow } from '../../agent-settings';
import { FlowRuntime, FlowStep } from '../flow-runtime';
import { modelRouter, RouteDecision } from '../intent-router';
import { answerOf, historyOf, ROUTING_FLOWS, RoutingCase, valueMatches } from './routing-corpus';

/** What one corpus case did: the routing call made, the router's verdict and the moves the flow then made. */
export interface CaseOutcome {
  flow: AgentFlow;
  runtime: FlowRuntime;
  step: FlowStep;
  /** The routing calls the model received (one per turn). */
  requests: CompletionRequest[];
  /** The model's raw answers, and its failure if it failed. */
  answers: string[];
  error?: unknown;
  decision?: RouteDecision;
  /** The moves after the start: the intent edge taken first, then any router node's. */
  moves: Omit<FlowTransition, 'at_ms'>[];
  /** The call's variables afterwards (as text). */
  variables: Record<string, string>;
  ms: number;
}

/**
 * Runs one case as a call would: a FlowRuntime on the case's flow, opened on the case's node, routing with
 * `modelRouter` over `llm` (under the flow's `routing.instructions`), and the caller's turn (`before` then `said`).
 */
export async function runCase(c: RoutingCase, llm: LlmProvider, model = 'router-model'): Promise<CaseOutcome> {
  const flow: AgentFlow = { ...(ROUTING_FLOWS[c.flow] as AgentFlow), start: c.node };
  const requests: CompletionRequest[] = [];
  const answers: string[] = [];
  let error: unknown;
  const recorded: LlmProvider = {
    name: llm.name,
    stream: (request) => llm.stream(request),
    complete: async (request) => {
      requests.push(request);
      try {
        const result = await llm.complete(request);
        answers.push(result.text);
        return result;
      } catch (e) {
        error = e;
        throw e;
      }
    },
  };
  const router = modelRouter(recorded, { model, instructions: flow.routing?.instructions });
  let decision: RouteDecision | undefined;
  const transitions: Omit<FlowTransition, 'at_ms'>[] = [];
  const variables: Record<string, string> = {};
  const runtime = new FlowRuntime({
    flow,
    variables,
    tools: [],
    route: async (request) => (decision = await router(request)),
    onTransition: (t) => transitions.push(t),
  });
  runtime.start();
  const started = performance.now();
  const step = await runtime.userTurn(historyOf(c), new AbortController().signal);
  return { flow, runtime, step, requests, answers, error, decision, moves: transitions.slice(1), variables, ms: performance.now() - started };
}

/** The case's expected values as the router types them (a pattern's example for text said several ways). */
export function expectedCaptured(c: RoutingCase): Record<string, string | number | boolean> {
  return Object.fromEntries(Object.entries(c.captured ?? {}).map(([name, value]) => [name, answerOf(value)]));
}

/** The capture types the case's expected edge declares. */
export function captureTypes(c: RoutingCase): Record<string, CaptureType> {
  const node = ROUTING_FLOWS[c.flow].nodes.find((n) => n.id === c.node) as AgentFlow['nodes'][number] | undefined;
  return node?.edges?.find((e) => (e.type ?? 'intent') === 'intent' && e.to === c.to)?.capture ?? {};
}

/** Whether a value has the JSON type its capture declares. */
export function hasType(value: unknown, type: CaptureType): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isInteger(value);
  return typeof value === type;
}

/**
 * A real model's outcome against the case, as the live check scores it. `edge`: the flow did what was expected
 * (the expected edge fired; or, with `missing`, that edge was chosen and waits for exactly those values; or, with
 * no edge expected, nothing fired); a failed call never is. `values`: besides, every expected value was captured, typed, and matching
 * (valueMatches).
 */
export function score(c: RoutingCase, outcome: CaseOutcome): { edge: boolean; values: boolean; got: string } {
  const d = outcome.decision;
  const fired = d?.choice && !d.missing.length ? d.choice.edge.to : null;
  const waiting = d?.choice && d.missing.length ? d.choice.edge.to : null;
  const sameMissing = (a: string[], b: string[]) => [...a].sort().join() === [...b].sort().join();
  // A failed call is a miss, even where staying was expected: the model did not decide.
  const edge = !outcome.error && (c.missing?.length ? waiting === c.to && sameMissing(d?.missing ?? [], c.missing) : fired === c.to);
  const types = captureTypes(c);
  const values =
    edge && Object.entries(c.captured ?? {}).every(([name, want]) => hasType(d?.captured[name], types[name]) && valueMatches(want, d?.captured[name]));
  const got = outcome.error
    ? `error: ${String(outcome.error)}`
    : d?.choice
      ? `${d.choice.edge.to}${Object.keys(d.captured).length ? ` ${JSON.stringify(d.captured)}` : ''}${d.missing.length ? ` missing [${d.missing.join(', ')}]` : ''}`
      : 'stays';
  return { edge, values, got };
}

/** The case's expectation in the same words as `score`'s `got`. */
export function expectation(c: RoutingCase): string {
  if (!c.to) return 'stays';
  const captured = Object.keys(c.captured ?? {}).length ? ` ${JSON.stringify(c.captured, (_k, v) => (v instanceof RegExp ? String(v) : v))}` : '';
  return `${c.to}${captured}${c.missing?.length ? ` missing [${c.missing.join(', ')}]` : ''}`;
}

/** The caller and agent lines of a conversation as the routing prompt writes them. */
export function promptLines(history: ChatMessage[]): string[] {
  return history.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => `${m.role === 'user' ? 'Caller' : 'Agent'}: ${m.content}`);
}
