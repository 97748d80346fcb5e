import { eventVariables, type EdgeType, type FlowEdge, type FlowNode, type FlowTransition } from '@parley/contracts';
import type { ChatMessage } from '@parley/llm';
import { byLanguage, type AgentFlow, type LanguageSettings } from '../agent-settings';
import type { Dialogue } from '../dialogue';
import type { OfferedTool } from '../tools';
import { expressionHolds } from './conditions';
import { Captured, IntentRouter } from './intent-router';

export interface FlowRuntimeOptions {
  flow: AgentFlow;
  /** The call's variables as text, shared with the engine: expressions read them, captures and events write them. */
  variables: Record<string, string>;
  /** Every tool the agent offers; a node narrows them. */
  tools: OfferedTool[];
  /** Decides between a node's intent edges. */
  route: IntentRouter;
  /** A move, as it happens (the engine adds the time). */
  onTransition(transition: Omit<FlowTransition, 'at_ms'>): void;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * What the engine does once the flow has settled: `answer` (the model answers under the current node's
 * instructions and tools), `say` (a static node's line; `last`: it has no edges, so the call ends after it),
 * `listen` (nothing to say: wait for the caller) or `none` (the turn was overtaken by an injected event).
 */
export type FlowStep = { kind: 'answer' } | { kind: 'say'; node: FlowNode; last: boolean } | { kind: 'listen' } | { kind: 'none' };

interface Move {
  edge: FlowEdge;
  index: number;
  kind: EdgeType;
  captured?: Captured;
  event?: string;
}

/** Moves one turn or event may make before the flow is taken to loop (routers pointing at each other). */
const MAX_MOVES = 16;
/** Tools a node's `tools` list cannot hide: a caller's opt-out must be honoured on every node. */
const ALWAYS_OFFERED = new Set(['record_opt_out']);

/**
 * A call's conversation flow at run time: the current node and the call's variables. No audio and no timers: the
 * engine asks it at each turn boundary (`userTurn`), when the call opens (`start`) and when an event is injected
 * (`event`), and it answers with the step to take; between, it is the engine's Dialogue (the current node's
 * prompt and tools). Edges are tried in the contract's order: `expression` (by priority), then `intent` (one
 * routing call; `capture` values must all be present), then `always`; `event` edges only on their event. A
 * `router` node moves on in the same turn; an event no edge waits for is remembered and fires when the flow reaches
 * a node with an edge for it.
 */
export class FlowRuntime implements Dialogue {
  private node: FlowNode;
  private readonly nodes: Map<string, FlowNode>;
  /** Tools run on this visit of the node (a forced `tool` is forced until it has run once per visit). */
  private ran = new Set<string>();
  /** Capture values the chosen intent edge still lacks, for the node's next answer. */
  private missing: string[] = [];
  /** Moves so far: a turn whose routing an event overtook sees it changed. */
  private moves = 0;
  /** Events no edge waited for when they came, by name, oldest first. */
  private readonly latched = new Map<string, Record<string, unknown>>();
  /** Whether the start node was entered: an event before that (during the greeting) waits for it. */
  private started = false;

  constructor(private readonly options: FlowRuntimeOptions) {
    const { flow } = options;
    this.nodes = new Map(flow.nodes.map((n) => [n.id, n]));
    this.node = this.nodes.get(flow.start ?? '') ?? flow.nodes[0];
  }

  get current(): FlowNode {
    return this.node;
  }

  /** Moves made so far; unchanged across a turn means the turn stayed on its node. */
  get revision(): number {
    return this.moves;
  }

  /**
   * The call opens: the start node is entered (a router moves on by its expression and always edges). An event
   * injected before (while the greeting played) fires now if the start node waits for it; an llm node it leads to
   * then speaks at once, as on any event.
   */
  start(): FlowStep {
    this.started = true;
    this.options.onTransition({ from: '', to: this.node.id, kind: 'start', edge_index: -1 });
    const latched = this.latchedMove(this.node);
    if (latched) this.follow(latched);
    this.settle();
    if (kind(this.node) === 'static') return this.say();
    return latched && kind(this.node) === 'llm' ? { kind: 'answer' } : { kind: 'listen' };
  }

  /**
   * The conversation resumes after a transfer that did not connect, on `nodeId`, the node the flow was on. Nothing is
   * recorded (the flow did not move) and the visit goes on: the node's forced tool ran before the transfer (it is the
   * visit's first answer), so it is not forced again. An event kept meanwhile fires now if the node waits for it;
   * otherwise the caller speaks next. A node the flow no longer has (the agent changed since) resumes at the start.
   */
  resume(nodeId: string): FlowStep {
    const node = this.nodes.get(nodeId);
    if (!node) {
      this.log('flow resumes at its start: it has no node it was on', { node: nodeId });
      return this.start();
    }
    this.started = true;
    this.node = node;
    if (node.tool) this.ran.add(node.tool);
    const latched = this.latchedMove(node);
    if (!latched) return { kind: 'listen' };
    this.follow(latched);
    return this.afterMove();
  }

  /**
   * A caller's turn begins: what the last turn's chosen edge was missing is forgotten (this turn's routing says
   * again), and the answer is whether the current node will answer unless an intent edge fires; the engine then
   * starts that answer while the router decides, and keeps it when the flow stays.
   */
  beginTurn(): boolean {
    this.missing = [];
    const edges = this.node.edges ?? [];
    return kind(this.node) === 'llm' && edges.some((e) => kind(e) === 'intent') && !this.expressionMove(this.node);
  }

  /** The caller finished a turn (`history` ends with it): the flow follows the edges that fire, then says what to do. */
  async userTurn(history: ChatMessage[], signal: AbortSignal): Promise<FlowStep> {
    let expected = this.moves;
    this.missing = [];
    for (let hops = 0; hops < MAX_MOVES; hops++) {
      const move = this.expressionMove(this.node) ?? (await this.intentMove(history, signal)) ?? this.alwaysMove(this.node);
      if (signal.aborted || this.moves !== expected) return { kind: 'none' };
      if (!move) break;
      this.follow(move);
      expected = this.moves;
      if (kind(this.node) !== 'router') break;
    }
    if (kind(this.node) === 'static') return this.say();
    return { kind: 'answer' };
  }

  /**
   * An outside system injected `name`: its payload's fields become call variables (nested ones by dotted path), and
   * an event edge waiting on the current node fires; else the event is kept for a node that waits for it.
   */
  event(name: string, payload: Record<string, unknown>): FlowStep | undefined {
    Object.assign(this.options.variables, eventVariables(payload));
    const move = this.started ? this.eventMove(this.node, name) : undefined;
    if (!move) {
      this.latched.delete(name);
      this.latched.set(name, payload);
      this.log('flow event kept for later', { event: name, node: this.node.id });
      return undefined;
    }
    this.follow(move);
    return this.afterMove();
  }

  /** The flow moved outside a caller's turn: routers move on, then the node it settles on speaks or listens. */
  private afterMove(): FlowStep {
    this.settle();
    return kind(this.node) === 'static' ? this.say() : kind(this.node) === 'llm' ? { kind: 'answer' } : { kind: 'listen' };
  }

  /** Seconds of quiet after which the current node is said or asked again; undefined: never. */
  repeatSeconds(): number | undefined {
    return this.node.repeat_after_silence_seconds || undefined;
  }

  // ---- Dialogue: what the current node's answer is made of ----------------------------------------------------

  instructions(language: LanguageSettings): string {
    const node = this.node;
    const parts = [language.systemPrompt];
    if (kind(node) === 'llm') {
      if (node.prompt) parts.push(node.prompt);
      const example = byLanguage(node.examples, language.code);
      if (example) parts.push(`Example of a reply at this step: ${example}`);
      if (this.missing.length) parts.push(`Before the conversation can move on, the caller still has to give: ${this.missing.join(', ')}. Ask for it.`);
    }
    return parts.filter(Boolean).join('\n\n');
  }

  tools(): OfferedTool[] {
    const visible = this.node.tools;
    // A node grounded in no base offers no search of one.
    const offered = this.node.knowledge_base_ids?.length === 0 ? this.options.tools.filter((t) => t.kind !== 'search_knowledge_base') : this.options.tools;
    if (!visible) return offered;
    const names = new Set([...visible, ...(this.node.tool ? [this.node.tool] : [])]);
    return offered.filter((t) => names.has(t.definition.name) || ALWAYS_OFFERED.has(t.definition.name));
  }

  knowledgeBases(): string[] | undefined {
    return this.node.knowledge_base_ids;
  }

  toolChoice(): { name: string } | undefined {
    const forced = this.node.tool;
    if (!forced || this.ran.has(forced)) return undefined;
    if (!this.tools().some((t) => t.definition.name === forced)) {
      this.log('flow node forces a tool this agent does not offer; not forced', { node: this.node.id, tool: forced });
      return undefined;
    }
    return { name: forced };
  }

  toolRan(name: string): void {
    this.ran.add(name);
  }

  // ---- moving -----------------------------------------------------------------------------------------------

  /** Router nodes reached outside a turn move on by their expression and always edges (no words to route on). */
  private settle(): void {
    for (let hops = 0; hops < MAX_MOVES && kind(this.node) === 'router'; hops++) {
      const move = this.expressionMove(this.node) ?? this.alwaysMove(this.node);
      if (!move) return;
      this.follow(move);
    }
  }

  private say(): FlowStep {
    return { kind: 'say', node: this.node, last: !(this.node.edges ?? []).length };
  }

  private expressionMove(node: FlowNode): Move | undefined {
    const scope = { values: this.options.variables, types: this.options.flow.variables };
    return first(node, 'expression', (e) => expressionHolds(e.expression, scope));
  }

  private alwaysMove(node: FlowNode): Move | undefined {
    return first(node, 'always', () => true);
  }

  private eventMove(node: FlowNode, name: string): Move | undefined {
    const move = first(node, 'event', (e) => e.event === name);
    return move && { ...move, event: name };
  }

  private async intentMove(history: ChatMessage[], signal: AbortSignal): Promise<Move | undefined> {
    const node = this.node;
    const choices = ordered(node, 'intent').map(({ edge, index }) => ({ edge, index, target: this.nodes.get(edge.to) }));
    if (!choices.length) return undefined;
    let decision;
    try {
      decision = await this.options.route({ node, choices, history, signal });
    } catch (error) {
      if (!signal.aborted) this.log('flow routing failed; no intent edge fires', { node: node.id, err: String(error) });
      return undefined;
    }
    const choice = decision.choice;
    if (!choice) return undefined;
    if (decision.missing.length) {
      this.missing = decision.missing;
      this.log('intent edge waits for values', { node: node.id, to: choice.edge.to, missing: decision.missing });
      return undefined;
    }
    return { edge: choice.edge, index: choice.index, kind: 'intent', captured: decision.captured };
  }

  /** Takes the edge: the move is recorded, captured values become variables, and a latched event may fire at once. */
  private follow(move: Move): void {
    let next: Move | undefined = move;
    for (let hops = 0; next && hops < MAX_MOVES; hops++) {
      const from = this.node;
      const to = this.nodes.get(next.edge.to);
      if (!to) {
        this.log('flow edge names no node; stays', { node: from.id, to: next.edge.to });
        return;
      }
      if (next.captured) Object.assign(this.options.variables, Object.fromEntries(Object.entries(next.captured).map(([k, v]) => [k, String(v)])));
      this.node = to;
      this.ran = new Set();
      this.missing = [];
      this.moves++;
      this.options.onTransition({
        from: from.id,
        to: to.id,
        kind: next.kind,
        edge_index: next.index,
        ...(next.edge.when ? { when: next.edge.when } : {}),
        ...(next.event ? { event: next.event } : {}),
        ...(next.captured && Object.keys(next.captured).length ? { captured: next.captured } : {}),
      });
      next = this.latchedMove(to);
    }
  }

  /** An event that came before the flow reached `node`, and that one of its event edges waits for: used up now. */
  private latchedMove(node: FlowNode): Move | undefined {
    for (const name of this.latched.keys()) {
      const move = this.eventMove(node, name);
      if (move) {
        this.latched.delete(name);
        return move;
      }
    }
    return undefined;
  }

  private log(message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(message, fields);
  }
}

function kind(item: FlowNode): 'llm' | 'static' | 'router';
function kind(item: FlowEdge): EdgeType;
function kind(item: FlowNode | FlowEdge): string {
  return 'id' in item ? item.type ?? 'llm' : item.type ?? 'intent';
}

/** A node's edges of one type, lowest priority first (the order written among equals). */
function ordered(node: FlowNode, type: EdgeType): { edge: FlowEdge; index: number }[] {
  return (node.edges ?? [])
    .map((edge, index) => ({ edge, index }))
    .filter(({ edge }) => kind(edge) === type)
    .sort((a, b) => (a.edge.priority ?? 0) - (b.edge.priority ?? 0) || a.index - b.index);
}

function first(node: FlowNode, type: EdgeType, fires: (edge: FlowEdge) => boolean): Move | undefined {
  const hit = ordered(node, type).find(({ edge }) => fires(edge));
  return hit && { edge: hit.edge, index: hit.index, kind: type };
}
