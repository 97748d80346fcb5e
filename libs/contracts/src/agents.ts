import type { Agent, GetAgentRuntimeResponse } from './gen/parley/agents/v1/agents';
import type { SuccessCriteria } from './success';

/*
 * The agent model: the fields of the public Agent, defined once. The gateway's DTO classes implement these types
 * (and add HTTP validation and documentation); the agents service stores them; the calls, webhooks and media
 * services read them from the JSON that crosses gRPC through readAgent / readAgentRuntime, never through casts.
 */

/** The agent fields a group's `defaults` fill and an agent's `overrides` can claim (the public `overrides` enum). */
export const INHERITABLE_FIELDS = [
  'model',
  'models',
  'temperature',
  'max_tokens',
  'speed',
  'pitch',
  'autonomy',
  'capabilities',
  'knowledge_base_ids',
  'tools',
  'record_calls',
  'transcribe_calls',
  'transfer_number',
  'carrier',
  'filler_phrase',
  'webhook_url',
] as const;
export type InheritableField = (typeof INHERITABLE_FIELDS)[number];

export const AGENT_MODES = ['conversation', 'keypad', 'normal', 'webrtc'] as const;
export const AUTONOMY_LEVELS = ['agentic', 'simple', 'custom'] as const;
export const VOICEMAIL_ACTIONS = ['continue', 'hangup', 'message'] as const;
export const LANGUAGE_DETECTION = ['off', 'follow'] as const;
export const NODE_TYPES = ['llm', 'static', 'router'] as const;
export const EDGE_TYPES = ['intent', 'expression', 'always', 'event'] as const;
export const EXPRESSION_LOGIC = ['and', 'or'] as const;
export const CONDITION_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'contains', 'exists', 'not_exists'] as const;
export const VARIABLE_TYPES = ['string', 'number', 'boolean'] as const;
export const CAPTURE_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export const EXTRACTION_TYPES = ['string', 'number', 'boolean', 'enum'] as const;
export const TOOL_KINDS = ['calendar_availability', 'book_appointment', 'transfer_call', 'custom_function'] as const;
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const PARAMETER_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export const PARAMETER_LOCATIONS = ['body', 'query', 'path'] as const;

export type AgentMode = (typeof AGENT_MODES)[number];
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];
export type VoicemailAction = (typeof VOICEMAIL_ACTIONS)[number];
export type LanguageDetection = (typeof LANGUAGE_DETECTION)[number];
export type NodeType = (typeof NODE_TYPES)[number];
export type EdgeType = (typeof EDGE_TYPES)[number];
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];
export type VariableType = (typeof VARIABLE_TYPES)[number];
export type CaptureType = (typeof CAPTURE_TYPES)[number];
export type ExtractionType = (typeof EXTRACTION_TYPES)[number];
export type ToolKind = (typeof TOOL_KINDS)[number];
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface LanguageEntry {
  code: string;
  greeting?: string;
  silence_prompt?: string;
  stt_provider?: string;
  tts_provider?: string;
  system_prompt?: string;
  voice_id?: string;
  voices?: Record<string, string>;
}

export interface Capabilities {
  call_functions?: boolean;
  end_call?: boolean;
  max_tool_rounds?: number;
  retrieval_timeout_ms?: number;
  search_knowledge?: boolean;
  transfer?: boolean;
}

export interface ConversationSettings {
  interrupt_phrases?: string[];
  interrupt_words?: number;
  max_call_seconds?: number;
  silence_hangup_seconds?: number;
  silence_prompt_seconds?: number;
  voicemail?: VoicemailAction;
  voicemail_message?: string;
}

export interface FlowCondition {
  variable: string;
  operator: ConditionOperator;
  value?: unknown;
}

export interface FlowExpression {
  logic?: (typeof EXPRESSION_LOGIC)[number];
  conditions?: FlowCondition[];
}

export interface FlowEdge {
  to: string;
  type?: EdgeType;
  when?: string;
  priority?: number;
  capture?: Record<string, CaptureType>;
  event?: string;
  expression?: FlowExpression;
}

export interface FlowNode {
  id: string;
  type?: NodeType;
  description?: string;
  prompt?: string;
  say?: string;
  say_in?: Record<string, string>;
  examples?: Record<string, string>;
  tool?: string;
  tools?: string[];
  knowledge_base_ids?: string[];
  repeat_after_silence_seconds?: number;
  edges?: FlowEdge[];
}

export interface FlowRouting {
  model?: string;
  instructions?: string;
}

export interface Flow {
  start?: string;
  nodes?: FlowNode[];
  routing?: FlowRouting;
  variables?: Record<string, VariableType>;
}

export interface ExtractionField {
  name: string;
  description: string;
  type?: ExtractionType;
  options?: string[];
}

export interface PostCall {
  summary?: boolean;
  model?: string;
  extraction?: ExtractionField[];
  /** What counts as a successful call (the call's `successful`); absent: the agent defines none, calls say null. */
  success?: SuccessCriteria;
}

export interface ToolParameter {
  name: string;
  type: (typeof PARAMETER_TYPES)[number];
  description?: string;
  required?: boolean;
  /** Allowed values of a string parameter. */
  enum?: string[];
  /** Where the argument goes; default `body`. */
  in?: (typeof PARAMETER_LOCATIONS)[number];
}

/** A calendar tool's block, its credential aside (its form depends on who reads it). */
export interface ToolCalendar {
  provider?: string;
  event_type_id?: number;
  event_type_slug?: string;
  event_type_title?: string;
  duration_minutes?: number;
  /** IANA zone of the caller; empty: the agent's. */
  timezone?: string;
}

export interface ToolTransfer {
  destination: string;
  webhook_url?: string;
}

/** A custom function's request, its sealed headers aside (their form depends on who reads them). */
export interface ToolRequest {
  url: string;
  method?: HttpMethod;
  headers?: Record<string, string>;
  body_template?: string;
  timeout_seconds?: number;
  parameters?: ToolParameter[];
}

/** A credential as written, and as only the media worker's runtime read carries it back: in the clear. */
export interface ApiKeyInput {
  value: string;
}

/** A credential as every other read shows it. */
export interface ApiKeyHint {
  hint: string;
}

/**
 * One tool config. The kind decides which block applies (an agents service rule); the blocks' credential fields
 * take the form of who reads them, hence the parameters.
 */
export interface ToolConfigOf<Calendar extends ToolCalendar = ToolCalendar, Request extends ToolRequest = ToolRequest> {
  kind: ToolKind;
  name: string;
  description: string;
  pre_tool_message?: Record<string, string>;
  calendar?: Calendar;
  transfer?: ToolTransfer;
  request?: Request;
}

/** Credentials in the clear: as clients write them and as the media worker's runtime read (GetAgentRuntime) carries them. */
export type ToolConfigInput = ToolConfigOf<ToolCalendar & { api_key?: ApiKeyInput }, ToolRequest & { secret_header_values?: Record<string, string> }>;

/** As every read of the agent returns it: the key as a hint, the sealed headers by name only. */
export type ToolConfigOutput = ToolConfigOf<ToolCalendar & { api_key?: ApiKeyHint }, ToolRequest & { secret_header_names?: string[] }>;

/**
 * The end-of-call keypad survey of a conversation agent: when the agent ends the call (end_call, a flow's last
 * line), it asks for a rating from 1 to 5, waits for one key and records it (`csat.received`, source `keypad`).
 * Never asked when the caller hangs up.
 */
export interface CsatSurveySettings {
  enabled: boolean;
  /** Said to ask for the rating ({{variables}} filled); absent or empty: the built-in prompt (English). */
  prompt?: string;
  /** Said once the rating was taken, before hanging up; absent or empty: the built-in thanks (English). */
  thanks?: string;
  /** The wait for a key after the prompt, in seconds (1-30); 0 or absent: 5. */
  timeout_seconds?: number;
}

/** The writable fields of an agent; `Tool` is the tool config's form (input or output). */
export interface AgentFields<Tool extends ToolConfigOf = ToolConfigInput> {
  name: string;
  description?: string;
  mode?: AgentMode;
  autonomy?: AutonomyLevel;
  capabilities?: Capabilities;
  conversation?: ConversationSettings;
  csat_survey?: CsatSurveySettings;
  filler_phrase?: string;
  flow?: Flow;
  group_id?: string;
  keypad_timeout_seconds?: number;
  knowledge_base_id?: string;
  knowledge_base_ids?: string[];
  language_detection?: LanguageDetection;
  languages: LanguageEntry[];
  max_no_input?: number;
  max_tokens?: number;
  model?: string;
  models?: Record<string, string>;
  no_input?: string;
  overrides?: InheritableField[];
  pitch?: number;
  speed?: number;
  temperature?: number;
  post_call?: PostCall;
  record_calls?: boolean;
  transcribe_calls?: boolean;
  ring_seconds?: number;
  tool_configs?: Tool[];
  tools?: string[];
  webhook_url?: string;
  carrier?: string;
  transfer_number?: string;
  metadata?: Record<string, string>;
}

/** What clients write (POST; PATCH sends any part of it). */
export type AgentInput = AgentFields<ToolConfigInput>;

/** The agent document as every read returns it (gRPC `Agent.spec_json`): credentials redacted, documented defaults filled. */
export type AgentDocument = AgentFields<ToolConfigOutput>;

/** The inheritable fields as calls use them, after group inheritance and defaults (gRPC `Agent.effective_json`). */
export type EffectiveConfig = Partial<Pick<AgentDocument, InheritableField>>;

/** A group's defaults: the inheritable fields, in the form clients write them. */
export type GroupDefaults = Partial<Pick<AgentInput, InheritableField>>;

/** A function the deployment registers (FUNCTIONS_FILE) for agents to call: the runtime sends the arguments to `url`. */
export interface RegisteredFunction {
  name: string;
  description: string;
  /** JSON Schema (type object) of the arguments. */
  parameters: Record<string, unknown>;
  url: string;
  method?: 'POST' | 'PUT' | 'PATCH' | 'GET';
  timeout_seconds?: number;
}

/** An agent as the services that run calls read it. */
export interface AgentRead {
  spec: AgentDocument;
  effective: EffectiveConfig;
}

/** What only the media worker's read carries: the tools the agent executes, credentials in the clear. */
export interface AgentRuntimeTools {
  tool_configs: ToolConfigInput[];
  /** The registered functions the agent's effective `tools` names. */
  functions: RegisteredFunction[];
}

/** The media worker's read (GetAgentRuntime). */
export interface AgentRuntimeRead extends AgentRead {
  runtime: AgentRuntimeTools;
}

/** An agent's document and effective fields from the gRPC message that carries them as JSON text. */
export function readAgent(agent: Pick<Agent, 'spec_json' | 'effective_json'>): AgentRead {
  return {
    spec: JSON.parse(agent.spec_json || '{}') as AgentDocument,
    effective: JSON.parse(agent.effective_json || '{}') as EffectiveConfig,
  };
}

/** The media worker's runtime read (GetAgentRuntime), typed. */
export function readAgentRuntime(res: GetAgentRuntimeResponse): AgentRuntimeRead {
  if (!res.agent) throw new Error('the agents service answered without an agent');
  return {
    ...readAgent(res.agent),
    runtime: {
      tool_configs: JSON.parse(res.tool_configs_json || '[]') as ToolConfigInput[],
      functions: JSON.parse(res.functions_json || '[]') as RegisteredFunction[],
    },
  };
}
