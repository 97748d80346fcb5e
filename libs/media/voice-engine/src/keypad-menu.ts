import { AgentFlow, FlowNode } from './agent-settings';
import { Clock } from './clock';
import { expressionHolds } from './flow/conditions';

export interface KeypadMenuOptions {
  clock: Clock;
  flow: AgentFlow | undefined;
  /** keypad_timeout_seconds: the wait for a key after a menu is read. */
  timeoutSeconds: number;
  /** max_no_input: silent rounds before the call ends (`no_input`). */
  maxNoInput: number;
  /** no_input: said before the menu is read again (empty: nothing). */
  noInput: string;
  /** The call's variables, which edge expressions test along with `digit`. */
  variables: Record<string, string>;
  /** A node's line in the call's language, variables filled. */
  lineOf(node: FlowNode): string;
  /** Speaks a fixed line; resolves once heard, or interrupted. */
  say(line: string): Promise<{ interrupted: boolean }>;
  /** Stops whatever the agent is saying (a key pressed during the menu). */
  interrupt(): void;
  /** The caller's key, as a user turn. */
  onKey(digit: string): void;
  /** Say goodbye and end the call. */
  goodbye(reason: string): Promise<void>;
  /** End the call now. */
  finish(reason: string): void;
  /** The call is over: nothing more happens. */
  ended(): boolean;
}

const INVALID_KEY = 'Sorry, that is not an option.';

/**
 * The keypad agent (mode `keypad`): the flow's static nodes read as menus, a key follows the node's edges
 * (expressions by priority, then the catch-all), a menu unanswered within the timeout is read again after the
 * no_input line, and max_no_input silent rounds end the call.
 */
export class KeypadMenu {
  private node: FlowNode | undefined;
  private timer: unknown;
  private noInputRounds = 0;

  constructor(private readonly options: KeypadMenuOptions) {}

  /** Every line the menu may say, for synthesis ahead of time. */
  lines(): string[] {
    const nodes = this.options.flow?.nodes ?? [];
    return [...nodes.map((n) => this.options.lineOf(n)), this.options.noInput, INVALID_KEY].filter(Boolean);
  }

  start(): Promise<void> {
    const nodes = this.options.flow?.nodes ?? [];
    return this.enter(nodes.find((n) => n.id === this.options.flow?.start) ?? nodes[0]);
  }

  /** A key the caller pressed. */
  press(digit: string): void {
    const node = this.node;
    if (!node) return;
    this.options.clock.clearTimeout(this.timer);
    // A key pressed during the menu stops the menu: the caller knows what they want.
    this.options.interrupt();
    this.noInputRounds = 0;
    this.options.onKey(digit);
    const next = this.route(node, { digit });
    if (next) void this.enter(next);
    else void this.options.say(INVALID_KEY).then(() => this.enter(node));
  }

  stop(): void {
    this.options.clock.clearTimeout(this.timer);
  }

  /** Reads a menu node, then waits for a key, repeating it after no_input. */
  private async enter(node: FlowNode | undefined): Promise<void> {
    if (this.options.ended()) return;
    this.node = node;
    if (!node) return this.options.finish('completed');
    const line = this.options.lineOf(node);
    const { interrupted } = line ? await this.options.say(line) : { interrupted: false };
    if (this.options.ended() || interrupted || this.node !== node) return;
    if (!node.edges?.length) return this.options.finish('completed');
    this.timer = this.options.clock.setTimeout(() => void this.noInput(node), this.options.timeoutSeconds * 1000);
  }

  private async noInput(node: FlowNode): Promise<void> {
    if (this.options.ended() || this.node !== node) return;
    if (++this.noInputRounds >= this.options.maxNoInput) return this.options.goodbye('no_input');
    if (this.options.noInput) await this.options.say(this.options.noInput);
    if (this.node === node) await this.enter(node);
  }

  /** The next node for a keypress: expression edges first (by priority), then the catch-all. */
  private route(node: FlowNode, variables: Record<string, string>): FlowNode | undefined {
    const edges = [...(node.edges ?? [])].sort((a, b) => (a.priority ?? 0) - (b.priority ?? 0));
    const scope = { values: { ...this.options.variables, ...variables }, types: this.options.flow?.variables };
    const match = edges.find((e) => e.type === 'expression' && expressionHolds(e.expression, scope)) ?? edges.find((e) => e.type === 'always');
    return match ? this.options.flow?.nodes.find((n) => n.id === match.to) : undefined;
  }
}
