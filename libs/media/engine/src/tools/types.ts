import type { EgressPolicy, Resolver } from '@parley/egress';
import type { Clock } from '../clock';

/**
 * Tool configuration as the media worker receives it (GetAgentRuntime): the public Tool config shape with the
 * secret headers in the clear under `request.secret_header_values`.
 */
export interface ToolParameter {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  description?: string;
  required?: boolean;
  /** Allowed values of a string parameter. */
  enum?: string[];
  /** Where the argument goes; default `body`. */
  in?: 'body' | 'query' | 'path';
}

export interface CustomFunctionConfig {
  kind: 'custom_function';
  name: string;
  description: string;
  pre_tool_message?: Record<string, string>;
  request: {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    /** Unsealed values (only the media worker's read carries them). */
    secret_header_values?: Record<string, string>;
    body_template?: string;
    timeout_seconds?: number;
    parameters?: ToolParameter[];
  };
}

export interface TransferConfig {
  kind: 'transfer_call';
  name: string;
  description: string;
  pre_tool_message?: Record<string, string>;
  transfer: { destination: string; webhook_url?: string };
}

/**
 * A Cal.com tool. The runtime read carries the key unsealed as `calendar.api_key.value`; the agent document's own
 * list has only its `hint` (and such a tool is not offered).
 */
export interface CalendarToolConfig {
  kind: 'calendar_availability' | 'book_appointment';
  name: string;
  description: string;
  pre_tool_message?: Record<string, string>;
  calendar?: {
    provider?: string;
    api_key?: { value?: string; hint?: string };
    event_type_id?: number;
    event_type_slug?: string;
    event_type_title?: string;
    duration_minutes?: number;
    /** IANA zone of the caller; empty: the agent's (UTC). */
    timezone?: string;
  };
}

export type ToolConfig = CustomFunctionConfig | TransferConfig | CalendarToolConfig;

/** A function the deployment registers (FUNCTIONS_FILE): the runtime sends the arguments as JSON to `url`. */
export interface RegisteredFunction {
  name: string;
  description: string;
  /** JSON Schema (type object) of the arguments. */
  parameters: Record<string, unknown>;
  url: string;
  method?: string;
  timeout_seconds?: number;
}

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
