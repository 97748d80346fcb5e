import { INHERITABLE_FIELDS, type InheritableField } from '@parley/contracts';
import { SealedSecret } from '@parley/persistence';

/**
 * The agent document as stored (the public Agent fields; secrets sealed in place). The gateway validates the
 * shape of what clients send; this service owns the rules that need the whole document or the deployment.
 */
export { INHERITABLE_FIELDS, type InheritableField };

export interface Capabilities {
  call_functions?: boolean;
  end_call?: boolean;
  max_tool_rounds?: number;
  retrieval_timeout_ms?: number;
  search_knowledge?: boolean;
  transfer?: boolean;
}

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

export interface FlowCondition {
  variable: string;
  operator: string;
  value?: unknown;
}

export interface FlowEdge {
  to: string;
  type?: 'intent' | 'expression' | 'always' | 'event';
  when?: string;
  priority?: number;
  capture?: Record<string, string>;
  event?: string;
  expression?: { logic?: 'and' | 'or'; conditions?: FlowCondition[] };
}

export interface FlowNode {
  id: string;
  type?: 'llm' | 'static' | 'router';
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

export interface Flow {
  start?: string;
  nodes?: FlowNode[];
  routing?: { model?: string; instructions?: string };
  variables?: Record<string, string>;
}


export interface ToolParameter {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  description?: string;
  required?: boolean;
  enum?: string[];
  in?: 'body' | 'query' | 'path';
}

export interface ToolConfig {
  kind: 'calendar_availability' | 'book_appointment' | 'transfer_call' | 'custom_function';
  name: string;
  description: string;
  pre_tool_message?: Record<string, string>;
  calendar?: {
    provider?: string;
    /** Written as {value}; stored sealed; read back as {hint}. */
    api_key?: { value?: string } | SealedSecret | { hint: string };
    event_type_id?: number;
    event_type_slug?: string;
    event_type_title?: string;
    duration_minutes?: number;
    timezone?: string;
  };
  transfer?: { destination: string; webhook_url?: string };
  request?: {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    /** Written only; stored sealed under `secret_headers`. */
    secret_header_values?: Record<string, string>;
    secret_headers?: Record<string, string>;
    secret_header_names?: string[];
    body_template?: string;
    timeout_seconds?: number;
    parameters?: ToolParameter[];
  };
}

export interface PostCall {
  summary?: boolean;
  model?: string;
  extraction?: { name: string; description: string; type?: 'string' | 'number' | 'boolean' | 'enum'; options?: string[] }[];
}

export interface AgentSpec {
  /** Storage format version; 2 is the first with the current meaning of `autonomy: simple`. */
  spec_version?: number;
  name: string;
  description?: string;
  mode?: 'conversation' | 'keypad' | 'normal' | 'webrtc';
  autonomy?: 'agentic' | 'simple' | 'custom';
  capabilities?: Capabilities;
  conversation?: {
    interrupt_phrases?: string[];
    interrupt_words?: number;
    max_call_seconds?: number;
    silence_hangup_seconds?: number;
    silence_prompt_seconds?: number;
    voicemail?: 'continue' | 'hangup' | 'message';
    voicemail_message?: string;
  };
  filler_phrase?: string;
  flow?: Flow;
  group_id?: string;
  keypad_timeout_seconds?: number;
  knowledge_base_id?: string;
  knowledge_base_ids?: string[];
  language_detection?: 'off' | 'follow';
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
  tool_configs?: ToolConfig[];
  tools?: string[];
  webhook_url?: string;
  carrier?: string;
  transfer_number?: string;
  metadata?: Record<string, string>;
}

export type { SealedSecret };

export const SPEC_VERSION = 2;

export interface GroupSpec {
  name: string;
  description?: string;
  color?: string;
  defaults?: Partial<Pick<AgentSpec, InheritableField>>;
  metadata?: Record<string, string>;
}
