import type { AgentDocument, AgentMode, AgentRuntimeTools, EffectiveConfig, Flow, FlowNode, LanguageDetection } from '@parley/contracts';
import { ToolConfig, ToolSettings } from './tools';

/**
 * What the engine needs of an agent, with the spec's "0 means default" rules applied once. Built from the agent
 * document (spec) and its effective inheritable fields, both as the agents service returns them.
 */
export interface LanguageSettings {
  code: string;
  greeting: string;
  systemPrompt: string;
  silencePrompt: string;
  sttProvider: string;
  ttsProvider: string;
  voiceId: string;
  voices: Record<string, string>;
}

export type { FlowEdge, FlowNode } from '@parley/contracts';

/** A flow with nodes (the agent's `flow` when it has any). */
export type AgentFlow = Omit<Flow, 'nodes'> & { nodes: FlowNode[] };

export interface AgentSettings {
  mode: AgentMode;
  languages: LanguageSettings[];
  model: string;
  temperature: number | undefined;
  maxTokens: number | undefined;
  speed: number | undefined;
  pitch: number | undefined;
  interruptWords: number;
  interruptPhrases: string[];
  /** Seconds; undefined = never. */
  silencePromptSeconds: number | undefined;
  silenceHangupSeconds: number | undefined;
  /** Seconds; undefined = the carrier's limit. */
  maxCallSeconds: number | undefined;
  endCallTool: boolean;
  /** What the conversation turn offers the model, and how many tool rounds it allows. */
  tools: ToolSettings;
  transferNumber: string;
  /** Grounding answers in knowledge bases. */
  knowledge: KnowledgeSettings;
  flow: AgentFlow | undefined;
  keypadTimeoutSeconds: number;
  maxNoInput: number;
  /** `follow`: move to another configured language when the caller speaks it. */
  languageDetection: LanguageDetection;
  noInput: string;
  /** The end-of-call keypad survey (csat_survey, conversation agents); undefined: none. Empty lines: the built-in ones. */
  csatSurvey: { prompt: string; thanks: string; timeoutSeconds: number } | undefined;
}

export interface KnowledgeSettings {
  /** Search each turn and offer search_knowledge_base: agentic agents, and custom ones with `search_knowledge`. */
  search: boolean;
  /** `knowledge_base_id` and the effective `knowledge_base_ids`. */
  baseIds: string[];
  /** capabilities.retrieval_timeout_ms; undefined: the deployment's budget. */
  timeoutMs: number | undefined;
}

/** The agent document as read; every field may be absent (an agent stored before the field existed). */
export type AgentSpec = Partial<AgentDocument>;

/** What only the media worker's runtime read carries: tool configs with their secrets, registered functions. */
export type RuntimeTools = Partial<AgentRuntimeTools>;

/** -1 never, 0 (or absent) the default, else the value. */
const seconds = (value: number | undefined, fallback: number) => (value === -1 ? undefined : value ? value : fallback);
const positive = (value: number | undefined) => (value ? value : undefined);

/**
 * `defaults.llmProvider` names the deployment's model provider: an agent's `models[that name]` overrides `model`.
 */
export function agentSettings(
  spec: AgentSpec,
  effective: EffectiveConfig,
  defaults: { model: string; sttProvider: string; ttsProvider: string; llmProvider?: string },
  runtime?: RuntimeTools,
): AgentSettings {
  const first = spec.languages?.[0];
  const languages = (spec.languages ?? [{ code: 'en-US' }]).map((l, i) => ({
    code: l.code,
    greeting: l.greeting ?? '',
    // A later entry without a prompt speaks the first entry's instructions in its own language.
    systemPrompt: l.system_prompt || (i > 0 && first?.system_prompt ? `${first.system_prompt}\n\nSpeak ${l.code} with the caller.` : ''),
    silencePrompt: l.silence_prompt ?? '',
    sttProvider: l.stt_provider || (i === 0 ? '' : first?.stt_provider ?? '') || defaults.sttProvider,
    ttsProvider: l.tts_provider || defaults.ttsProvider,
    voiceId: l.voice_id ?? '',
    voices: l.voices ?? {},
  }));
  const c = spec.conversation ?? {};
  const mode = spec.mode ?? 'conversation';
  // `custom` reads its capabilities; every other autonomy (agentic) has them all, with 3 tool rounds.
  const custom = effective.autonomy === 'custom';
  // A custom agent without the block: call control only (the spec's rule, as the agents service applies it).
  const caps = effective.capabilities ?? (custom ? { end_call: true, transfer: true } : {});
  const endCallTool = !custom || caps.end_call === true;
  const knowledge: KnowledgeSettings = {
    search: mode === 'conversation' && (!custom || caps.search_knowledge === true),
    baseIds: [...new Set([...(spec.knowledge_base_id ? [spec.knowledge_base_id] : []), ...(effective.knowledge_base_ids ?? [])])],
    timeoutMs: positive(caps.retrieval_timeout_ms),
  };
  return {
    mode,
    languages,
    model: (defaults.llmProvider && effective.models?.[defaults.llmProvider]) || effective.model || defaults.model,
    temperature: effective.temperature,
    maxTokens: positive(effective.max_tokens),
    speed: positive(effective.speed),
    pitch: positive(effective.pitch),
    interruptWords: c.interrupt_words || 2,
    interruptPhrases: c.interrupt_phrases ?? [],
    silencePromptSeconds: seconds(c.silence_prompt_seconds, 8),
    silenceHangupSeconds: seconds(c.silence_hangup_seconds, 20),
    maxCallSeconds: positive(c.max_call_seconds),
    endCallTool,
    tools: {
      conversation: mode === 'conversation',
      endCall: endCallTool,
      callFunctions: !custom || caps.call_functions === true,
      transfer: !custom || caps.transfer === true,
      maxToolRounds: custom && caps.max_tool_rounds ? Math.min(10, Math.max(1, caps.max_tool_rounds)) : 3,
      functionNames: effective.tools ?? [],
      functions: runtime?.functions ?? [],
      // The runtime read carries the secrets; the agent document's own list (redacted) serves without it. Narrowed
      // by kind: the agents service refuses a tool config without its kind's block.
      toolConfigs: (runtime?.tool_configs ?? spec.tool_configs ?? []) as ToolConfig[],
      fillerPhrase: effective.filler_phrase ?? '',
      transferNumber: effective.transfer_number ?? '',
      searchKnowledge: knowledge.search && knowledge.baseIds.length > 0,
    },
    knowledge,
    transferNumber: effective.transfer_number ?? '',
    flow: spec.flow?.nodes?.length ? { ...spec.flow, nodes: spec.flow.nodes } : undefined,
    keypadTimeoutSeconds: spec.keypad_timeout_seconds || 7,
    maxNoInput: spec.max_no_input || 2,
    noInput: spec.no_input ?? '',
    csatSurvey:
      mode === 'conversation' && spec.csat_survey?.enabled
        ? { prompt: spec.csat_survey.prompt ?? '', thanks: spec.csat_survey.thanks ?? '', timeoutSeconds: spec.csat_survey.timeout_seconds || 5 }
        : undefined,
    languageDetection: spec.language_detection === 'follow' && languages.length > 1 ? 'follow' : 'off',
  };
}

/** `{{name}}` placeholders filled from the call's variables; unknown names are left as written. */
export function fillVariables(text: string, variables: Record<string, string>): string {
  return text.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (whole, name: string) => variables[name] ?? whole);
}

/**
 * A per-language value of the agent document (`say_in`, `examples`, `pre_tool_message`): the exact code (any
 * case), else the first entry of the same base language (`en-GB` for `en-US`).
 */
export function byLanguage(values: Record<string, string> | undefined, code: string): string | undefined {
  if (!values) return undefined;
  const base = (c: string) => c.split(/[-_]/)[0].toLowerCase();
  const exact = Object.entries(values).find(([c]) => c.toLowerCase() === code.toLowerCase());
  return (exact ?? Object.entries(values).find(([c]) => base(c) === base(code)))?.[1];
}

/** The line a node says (a keypad menu, a flow's static node) in `language`: its `say_in` entry, else `say`. */
export function nodeLine(node: FlowNode, language: string): string {
  return byLanguage(node.say_in, language) ?? node.say ?? '';
}
