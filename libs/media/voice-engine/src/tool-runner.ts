import { ToolCall } from '@parley/llm';
import type { EgressPolicy, Resolver } from '@parley/egress';
import { Clock } from './clock';
import {
  notifyTransfer,
  OfferedTool,
  preToolLine,
  runBookAppointment,
  runCalendarAvailability,
  runCustomFunction,
  runRegisteredFunction,
  ToolOutcome,
  ToolRuntime,
  transferReason,
} from './tools';

/** A tool invocation as reported (call.tool.called). */
export interface ToolCallReport {
  name: string;
  /** end_call, record_opt_out, custom_function, registered_function, transfer_call, or unknown. */
  kind: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
  ok: boolean;
  error?: string;
}

/**
 * Outbound requests of tools: the guard's allowlist (EGRESS_ALLOWLIST), the http-allowed hosts, and the Cal.com
 * API the calendar tools call (CALENDAR_BASE_URL, default https://api.cal.com).
 */
export interface ToolNetwork {
  egress: EgressPolicy;
  internalHosts?: string[];
  calendarBaseUrl?: string;
  resolve?: Resolver;
  lookup?: Resolver;
}

export interface ToolRunnerOptions {
  clock: Clock;
  network: ToolNetwork | undefined;
  /** The call's id, sent to transfer webhooks. */
  callId: string;
  fillerPhrase: string;
  /** Moves the call (EngineHost.transfer); rejects when it could not. */
  transfer(destination: string): Promise<void>;
  /** Records an opt-out (EngineHost.recordOptOut); absent: not available. */
  recordOptOut?: () => Promise<void>;
  /** search_knowledge_base: the model's own query (arguments as written) against the agent's bases. */
  searchKnowledge?: (args: string, signal: AbortSignal) => Promise<ToolOutcome>;
  /** Reports an invocation (call.tool.called). */
  report(report: ToolCallReport): void;
  /** The carrier has the call now: the agent says nothing more. */
  onTransferred(): void;
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Runs the model's tool calls within an agent turn: each tool by its kind (HTTP tools through the egress guard,
 * calendar, transfer, opt-out), aborted with the turn's signal, reported once each; the outcome's text goes back
 * to the model. Also picks the line spoken while a round's tools run.
 */
export class ToolRunner {
  constructor(private readonly options: ToolRunnerOptions) {}

  /** The line spoken while a round's tools run: the first pre-tool message in the call's language, else the filler. */
  lineFor(calls: ToolCall[], tools: OfferedTool[], language: string): string {
    const speaks = (t: OfferedTool) => t.kind !== 'end_call' && t.kind !== 'record_opt_out';
    for (const call of calls) {
      const tool = tools.find((t) => t.definition.name === call.name);
      if (!tool || !speaks(tool)) continue;
      const line = preToolLine(tool, language, '');
      if (line) return line;
    }
    const runs = calls.some((c) => tools.some((t) => t.definition.name === c.name && speaks(t)));
    return runs ? this.options.fillerPhrase : '';
  }

  /**
   * Runs one tool call and reports it (call.tool.called). `played` resolves once the caller heard what the turn
   * said so far (a transfer waits for it).
   */
  async run(call: ToolCall, tools: OfferedTool[], signal: AbortSignal, played: () => Promise<void>): Promise<ToolOutcome> {
    const tool = tools.find((t) => t.definition.name === call.name);
    const args = call.arguments || '{}';
    let outcome: ToolOutcome;
    if (!tool) {
      outcome = { ok: false, result: `There is no tool named "${call.name}".`, error: 'unknown tool' };
    } else {
      const network = this.options.network;
      const rt: ToolRuntime = {
        egress: network?.egress ?? { allowlist: [] },
        internalHosts: network?.internalHosts ?? [],
        calendarBaseUrl: network?.calendarBaseUrl,
        clock: this.options.clock,
        signal,
        log: (m, f) => this.options.log(m, { tool: call.name, ...f }),
        resolve: network?.resolve,
        lookup: network?.lookup,
      };
      try {
        switch (tool.kind) {
          case 'custom_function':
            outcome = await runCustomFunction(tool.config, args, rt);
            break;
          case 'registered_function':
            outcome = await runRegisteredFunction(tool.fn, args, rt);
            break;
          case 'calendar_availability':
            outcome = await runCalendarAvailability(tool.config, args, rt);
            break;
          case 'book_appointment':
            outcome = await runBookAppointment(tool.config, args, rt);
            break;
          case 'transfer_call':
            outcome = await this.transfer(tool, args, rt, played);
            break;
          case 'record_opt_out':
            outcome = await this.optOut();
            break;
          case 'search_knowledge_base':
            outcome = this.options.searchKnowledge
              ? await this.options.searchKnowledge(args, signal)
              : { ok: false, result: 'The knowledge base cannot be searched right now.', error: 'not available' };
            break;
          default:
            outcome = { ok: true, result: 'Done.' };
        }
      } catch (error) {
        this.options.log('tool failed', { tool: call.name, err: String(error) });
        outcome = { ok: false, result: 'The tool call failed.', error: 'internal error' };
      }
    }
    this.report({ name: call.name, kind: tool?.kind ?? 'unknown', arguments: args, ok: outcome.ok, ...(outcome.error ? { error: outcome.error } : {}) });
    return outcome;
  }

  /** Reports an invocation; a host that fails to take it does not stop the call. */
  report(report: ToolCallReport): void {
    try {
      this.options.report(report);
    } catch (error) {
      this.options.log('tool call not reported', { err: String(error) });
    }
  }

  /**
   * transfer_call: the destination comes from configuration, never from the model. The webhook (if any) is told
   * first and waited on at most 3 s; then, once the caller has heard what was said so far, the host moves the
   * call. Refused by the carrier or the calls service: the model hears so and tells the caller.
   */
  private async transfer(tool: Extract<OfferedTool, { kind: 'transfer_call' }>, args: string, rt: ToolRuntime, played: () => Promise<void>): Promise<ToolOutcome> {
    const reason = transferReason(args);
    if (tool.webhookUrl) {
      const told = await notifyTransfer(tool.webhookUrl, { callId: this.options.callId, tool: tool.definition.name, destination: tool.destination, reason }, rt);
      if (!told.ok) this.options.log('transfer webhook not confirmed; transferring anyway', { err: told.error });
    }
    if (rt.signal.aborted) return { ok: false, result: 'The transfer was cancelled.', error: 'interrupted' };
    await played();
    if (rt.signal.aborted) return { ok: false, result: 'The transfer was cancelled.', error: 'interrupted' };
    try {
      await this.options.transfer(tool.destination);
    } catch (error) {
      this.options.log('transfer failed', { err: String(error) });
      return {
        ok: false,
        result: 'The transfer did not go through: the caller is still with you. Tell them you could not put them through, and keep helping.',
        error: 'transfer failed',
      };
    }
    this.options.onTransferred();
    return { ok: true, result: 'The caller is being transferred. Say nothing more.' };
  }

  private async optOut(): Promise<ToolOutcome> {
    if (!this.options.recordOptOut) return { ok: false, result: 'The request could not be recorded right now.', error: 'not available' };
    try {
      await this.options.recordOptOut();
      return { ok: true, result: 'Recorded: this number will not be contacted again. Confirm it to the caller.' };
    } catch (error) {
      this.options.log('opt-out not recorded', { err: String(error) });
      return { ok: false, result: 'The request could not be recorded right now. Apologise and tell the caller it will be passed on.', error: 'not recorded' };
    }
  }
}
