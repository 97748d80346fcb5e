import type { ApiKeyHint, ApiKeyInput, ToolCalendar, ToolConfigOf, ToolRequest, ToolTransfer } from '@parley/contracts';
import type { EgressPolicy, Resolver } from '@parley/egress';
import type { Clock } from '../clock';

export type { RegisteredFunction, ToolParameter } from '@parley/contracts';

/**
 * A tool config as the engine reads it: from the media worker's runtime read (credentials in the clear:
 * `calendar.api_key.value`, `request.secret_header_values`) or, without that read, the agent document's redacted
 * list (`calendar.api_key.hint`: such a calendar tool is not offered).
 */
type ReadToolConfig = ToolConfigOf<ToolCalendar & { api_key?: Partial<ApiKeyInput & ApiKeyHint> }, ToolRequest & { secret_header_values?: Record<string, string> }>;

export type CustomFunctionConfig = ReadToolConfig & { kind: 'custom_function'; request: NonNullable<ReadToolConfig['request']> };
export type TransferConfig = ReadToolConfig & { kind: 'transfer_call'; transfer: ToolTransfer };
export type CalendarToolConfig = ReadToolConfig & { kind: 'calendar_availability' | 'book_appointment' };

/** By kind, with the kind's block: the agents service refuses a tool config without it. */
export type ToolConfig = CustomFunctionConfig | TransferConfig | CalendarToolConfig;

/** What one invocation gives back: the text the model reads, and for the call.tool.called report, the error. */
export interface ToolOutcome {
  ok: boolean;
  /** Returned to the model as the tool message. Never carries deployment internals. */
  result: string;
  /** Short, caller-safe reason for the report (absent when ok). */
  error?: string;
}

/** What executing a tool's HTTP request needs from the engine's host. */
export interface ToolRuntime {
  /** The outbound-request guard's allowlist (EGRESS_ALLOWLIST). */
  egress: EgressPolicy;
  /** Hosts a tool may call over plain http (INTERNAL_HOSTS); https otherwise. */
  internalHosts: readonly string[];
  clock: Clock;
  /** Cal.com API of the calendar tools (CALENDAR_BASE_URL); default https://api.cal.com. */
  calendarBaseUrl?: string;
  /** The agent turn's signal: barge-in aborts the request. */
  signal: AbortSignal;
  log?: (message: string, fields?: Record<string, unknown>) => void;
  /** Resolvers of the guard (tests). */
  resolve?: Resolver;
  lookup?: Resolver;
}
