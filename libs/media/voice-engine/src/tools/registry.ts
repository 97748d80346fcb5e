import type { ToolDefinition } from '@parley/llm';
import { byLanguage } from '../agent-settings';
import { calendarDefinition, calendarUsable } from './calendar';
import { customFunctionDefinition } from './custom-function';
import { registeredFunctionDefinition } from './registered-function';
import { transferDefinition } from './transfer';
import { CalendarToolConfig, CustomFunctionConfig, RegisteredFunction, ToolConfig } from './types';

export type ToolKind =
  | 'end_call'
  | 'record_opt_out'
  | 'search_knowledge_base'
  | 'custom_function'
  | 'registered_function'
  | 'transfer_call'
  | 'calendar_availability'
  | 'book_appointment';

/** One tool offered to the model, with what executing it needs. */
export type OfferedTool =
  | { kind: 'end_call' | 'record_opt_out' | 'search_knowledge_base'; definition: ToolDefinition }
  | { kind: 'custom_function'; definition: ToolDefinition; config: CustomFunctionConfig; preToolMessage?: Record<string, string> }
  | { kind: 'registered_function'; definition: ToolDefinition; fn: RegisteredFunction }
  | { kind: 'calendar_availability' | 'book_appointment'; definition: ToolDefinition; config: CalendarToolConfig; preToolMessage?: Record<string, string> }
  | { kind: 'transfer_call'; definition: ToolDefinition; destination: string; webhookUrl?: string; preToolMessage?: Record<string, string> };

/** What decides the tools of a conversation turn (AgentSettings.tools). */
export interface ToolSettings {
  /** Conversation mode: record_opt_out is always offered there. */
  conversation: boolean;
  endCall: boolean;
  callFunctions: boolean;
  transfer: boolean;
  /** Tool-call-and-regenerate rounds per turn (1-10). */
  maxToolRounds: number;
  /** The agent's `tools`: registered functions it may call. */
  functionNames: string[];
  /** The registered functions' declarations (from the runtime read). */
  functions: RegisteredFunction[];
  toolConfigs: ToolConfig[];
  fillerPhrase: string;
  /** The agent's `transfer_number`: a built-in transfer_call when no transfer tool is configured. */
  transferNumber: string;
  /** Offer search_knowledge_base (knowledge search on, and bases to search). */
  searchKnowledge?: boolean;
}

export const END_CALL_TOOL: ToolDefinition = {
  name: 'end_call',
  description: 'End the call once the conversation is complete and you have said goodbye.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

export const RECORD_OPT_OUT_TOOL: ToolDefinition = {
  name: 'record_opt_out',
  description: 'The caller asked not to be contacted again: record it (their number joins the do-not-call list), then confirm it to them.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

export const SEARCH_KNOWLEDGE_TOOL: ToolDefinition = {
  name: 'search_knowledge_base',
  description:
    "Search the agent's knowledge base when the passages already given do not answer the caller's question: give a short query in your own words.",
  parameters: {
    type: 'object',
    properties: { query: { type: 'string', description: 'What to look up, in a few words.' } },
    required: ['query'],
    additionalProperties: false,
  },
};

const BUILT_IN_TRANSFER =
  'Transfer the caller to a person when they ask for one or when you cannot help them. Say that you are putting them through before calling it.';

/**
 * The tools offered in a turn, in this order, first name wins: `end_call` (capabilities.end_call),
 * `record_opt_out` (conversation mode, always), the agent's tool configs (custom_function behind
 * capabilities.call_functions, transfer_call behind capabilities.transfer, the calendar kinds behind
 * capabilities.call_functions and only with an event type and an unsealed key), the registered functions its `tools` names (capabilities.call_functions), and, with
 * capabilities.transfer, a built-in `transfer_call` to `transfer_number` when no transfer tool is configured.
 */
export function offeredTools(settings: ToolSettings): OfferedTool[] {
  const tools: OfferedTool[] = [];
  if (settings.endCall) tools.push({ kind: 'end_call', definition: END_CALL_TOOL });
  if (settings.conversation) tools.push({ kind: 'record_opt_out', definition: RECORD_OPT_OUT_TOOL });
  if (settings.searchKnowledge) tools.push({ kind: 'search_knowledge_base', definition: SEARCH_KNOWLEDGE_TOOL });
  for (const config of settings.toolConfigs) {
    if (config.kind === 'custom_function' && settings.callFunctions && config.request?.url) {
      tools.push({ kind: 'custom_function', definition: customFunctionDefinition(config), config, preToolMessage: config.pre_tool_message });
    } else if ((config.kind === 'calendar_availability' || config.kind === 'book_appointment') && settings.callFunctions && calendarUsable(config)) {
      tools.push({ kind: config.kind, definition: calendarDefinition(config), config, preToolMessage: config.pre_tool_message });
    } else if (config.kind === 'transfer_call' && settings.transfer && config.transfer?.destination) {
      tools.push({
        kind: 'transfer_call',
        definition: transferDefinition(config.name, config.description),
        destination: config.transfer.destination,
        webhookUrl: config.transfer.webhook_url || undefined,
        preToolMessage: config.pre_tool_message,
      });
    }
  }
  if (settings.callFunctions) {
    for (const name of settings.functionNames) {
      const fn = settings.functions.find((f) => f.name === name);
      if (fn) tools.push({ kind: 'registered_function', definition: registeredFunctionDefinition(fn), fn });
    }
  }
  if (settings.transfer && settings.transferNumber && !tools.some((t) => t.kind === 'transfer_call')) {
    tools.push({ kind: 'transfer_call', definition: transferDefinition('transfer_call', BUILT_IN_TRANSFER), destination: settings.transferNumber });
  }
  const seen = new Set<string>();
  return tools.filter((t) => !seen.has(t.definition.name) && seen.add(t.definition.name));
}

/** The line spoken while a tool runs: its pre_tool_message in the call's language (or that language's base), else the filler. */
export function preToolLine(tool: OfferedTool, language: string, fillerPhrase: string): string {
  return byLanguage('preToolMessage' in tool ? tool.preToolMessage : undefined, language) || fillerPhrase;
}
