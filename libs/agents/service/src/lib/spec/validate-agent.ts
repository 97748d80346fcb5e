import { FieldProblem, successCriteriaProblems } from '@parley/contracts';
import { AgentSpec, Flow, GroupSpec, ToolConfig } from './agent-spec';
import { UrlRules } from './check-urls';
import { normalizeLanguage } from './languages';

/** What the deployment offers, against which agents are checked. */
export interface DeploymentCatalogue {
  sttProviders: ReadonlySet<string>;
  ttsProviders: ReadonlySet<string>;
  /** Registered functions an agent's `tools` may name. */
  functions: ReadonlySet<string>;
  /** What URL fields are checked against (INTERNAL_HOSTS, EGRESS_ALLOWLIST); see check-urls. */
  urls: UrlRules;
}

const RESERVED_TOOL_NAMES = new Set(['end_call', 'search_knowledge_base']);
/** Tools the runtime itself provides, which flow nodes may name. */
const RUNTIME_TOOLS = ['end_call', 'search_knowledge_base', 'transfer_call'];
const E164 = /^\+[1-9]\d{6,14}$/;
const SIP = /^sips?:[^\s@]+@[^\s]+$/;
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)\s*\}\}/g;
const NUMERIC_OPERATORS = new Set(['gt', 'gte', 'lt', 'lte']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

class Problems {
  readonly list: FieldProblem[] = [];
  add(field: string, message: string): void {
    this.list.push({ field, message });
  }
}

/** Scheme and target are checked by checkUrlFields (it needs DNS); here only that the URL parses. */
function checkUrl(p: Problems, field: string, raw: string): URL | undefined {
  try {
    return new URL(raw.replace(PLACEHOLDER, 'x'));
  } catch {
    p.add(field, 'must be an absolute URL');
    return undefined;
  }
}

function checkDestination(p: Problems, field: string, value: string | undefined): void {
  if (value !== undefined && !E164.test(value) && !SIP.test(value)) p.add(field, 'must be an E.164 number (+15551234567) or a sip: URI');
}

/** Normalises language codes in place and checks the languages list. */
function checkLanguages(p: Problems, spec: AgentSpec, catalogue: DeploymentCatalogue): void {
  const seen = new Map<string, number>();
  spec.languages?.forEach((entry, i) => {
    const at = `languages[${i}]`;
    const code = normalizeLanguage(entry.code);
    if (!code) p.add(`${at}.code`, 'is not a language tag or language name');
    else {
      const first = seen.get(code.split('-')[0]);
      if (first !== undefined) p.add(`${at}.code`, `repeats the language of languages[${first}] (one entry per language)`);
      else seen.set(code.split('-')[0], i);
      entry.code = code;
    }
    if (i > 0 && !entry.voice_id) p.add(`${at}.voice_id`, 'is required on every language but the first');
    if (entry.stt_provider && !catalogue.sttProviders.has(entry.stt_provider)) {
      p.add(`${at}.stt_provider`, `is not a configured recognizer (${[...catalogue.sttProviders].join(', ')})`);
    }
    if (entry.tts_provider && !catalogue.ttsProviders.has(entry.tts_provider)) {
      p.add(`${at}.tts_provider`, `is not a configured synthesizer (${[...catalogue.ttsProviders].join(', ')})`);
    }
    for (const provider of Object.keys(entry.voices ?? {})) {
      if (!catalogue.ttsProviders.has(provider)) p.add(`${at}.voices.${provider}`, 'is not a configured synthesizer');
    }
  });
}

function checkToolConfig(p: Problems, tc: ToolConfig, at: string, catalogue: DeploymentCatalogue): void {
  if (RESERVED_TOOL_NAMES.has(tc.name)) p.add(`${at}.name`, `${tc.name} is reserved for the runtime`);
  if (catalogue.functions.has(tc.name)) p.add(`${at}.name`, 'is the name of a registered function');
  const wanted = tc.kind === 'custom_function' ? 'request' : tc.kind === 'transfer_call' ? 'transfer' : 'calendar';
  for (const block of ['calendar', 'transfer', 'request'] as const) {
    if (block !== wanted && tc[block] !== undefined) p.add(`${at}.${block}`, `does not apply to kind ${tc.kind}`);
  }
  if (!tc[wanted]) return p.add(`${at}.${wanted}`, `is required for kind ${tc.kind}`);

  if (tc.calendar) {
    const key = tc.calendar.api_key as { value?: string; sealed?: string } | undefined;
    if (!key || (!key.value && !key.sealed)) p.add(`${at}.calendar.api_key`, 'is required (write it as {"value": "…"})');
  }
  if (tc.transfer) {
    checkDestination(p, `${at}.transfer.destination`, tc.transfer.destination);
    if (tc.transfer.webhook_url) checkUrl(p, `${at}.transfer.webhook_url`, tc.transfer.webhook_url);
  }
  const request = tc.request;
  if (!request) return;
  const url = checkUrl(p, `${at}.request.url`, request.url);
  const params = request.parameters ?? [];
  const declared = new Set<string>();
  params.forEach((param, j) => {
    if (declared.has(param.name)) p.add(`${at}.request.parameters[${j}].name`, 'repeats another parameter');
    declared.add(param.name);
    if (param.enum && param.type !== 'string') p.add(`${at}.request.parameters[${j}].enum`, 'only restricts string parameters');
    if ((param.in ?? 'body') === 'path' && !request.url.includes(`{{${param.name}}}`)) {
      p.add(`${at}.request.parameters[${j}].in`, `is path but the URL has no {{${param.name}}} placeholder`);
    }
  });
  for (const [field, text] of [
    ['url', request.url],
    ['body_template', request.body_template ?? ''],
  ] as const) {
    for (const [, name] of text.matchAll(PLACEHOLDER)) {
      if (!declared.has(name)) p.add(`${at}.request.${field}`, `placeholder {{${name}}} names no declared parameter`);
    }
  }
  if (url && ['GET', 'DELETE'].includes(request.method ?? 'POST') && request.body_template) {
    p.add(`${at}.request.body_template`, `is not sent with ${request.method}`);
  }
  for (const name of Object.keys({ ...request.headers, ...request.secret_header_values })) {
    if (!HEADER_NAME.test(name)) p.add(`${at}.request.headers`, `${name} is not a valid header name`);
  }
  for (const name of Object.keys(request.secret_header_values ?? {})) {
    if (Object.keys(request.headers ?? {}).some((h) => h.toLowerCase() === name.toLowerCase())) {
      p.add(`${at}.request.secret_header_values.${name}`, 'is also a plain header');
    }
  }
}

function checkFlow(p: Problems, flow: Flow, spec: AgentSpec): void {
  // Only these two modes follow a flow: a stored flow that nothing reads is refused, not kept in silence.
  const mode = spec.mode ?? 'conversation';
  if (mode !== 'conversation' && mode !== 'keypad') {
    p.add('flow', `is followed by conversation and keypad agents only (this agent's mode is ${mode}); send {} to remove it`);
    return;
  }
  const keypad = mode === 'keypad';
  if (keypad && flow.routing !== undefined) p.add('flow.routing', 'applies to conversation agents only (a keypad menu has no intent edges)');
  const nodes = flow.nodes ?? [];
  const ids = new Map<string, number>();
  nodes.forEach((node, i) => {
    if (ids.has(node.id)) p.add(`flow.nodes[${i}].id`, `repeats nodes[${ids.get(node.id)}]`);
    else ids.set(node.id, i);
  });
  if (!flow.start) p.add('flow.start', 'is required when the flow has nodes');
  else if (!ids.has(flow.start)) p.add('flow.start', `names no node (${flow.start})`);
  const variables = flow.variables ?? {};
  for (const [name, type] of Object.entries(variables)) {
    if (!['string', 'number', 'boolean'].includes(type)) p.add(`flow.variables.${name}`, 'must be string, number or boolean');
  }
  const tools = new Set([...(spec.tools ?? []), ...(spec.tool_configs ?? []).map((t) => t.name), ...RUNTIME_TOOLS]);
  const bases = new Set([...(spec.knowledge_base_ids ?? []), ...(spec.knowledge_base_id ? [spec.knowledge_base_id] : [])]);

  nodes.forEach((node, i) => {
    const at = `flow.nodes[${i}]`;
    const type = node.type ?? 'llm';
    if (type === 'static' && !node.say && !Object.keys(node.say_in ?? {}).length) p.add(`${at}.say`, 'is required on a static node');
    if (type === 'router' && !(node.edges ?? []).length) p.add(`${at}.edges`, 'a router node needs at least one edge');
    if (node.tool && !tools.has(node.tool)) p.add(`${at}.tool`, `names no tool of this agent (${node.tool})`);
    node.tools?.forEach((t, j) => {
      if (!tools.has(t)) p.add(`${at}.tools[${j}]`, `names no tool of this agent (${t})`);
    });
    node.knowledge_base_ids?.forEach((kb, j) => {
      if (!bases.has(kb)) p.add(`${at}.knowledge_base_ids[${j}]`, 'is not one of the agent’s knowledge bases');
    });
    node.edges?.forEach((edge, j) => {
      const e = `${at}.edges[${j}]`;
      const kind = edge.type ?? 'intent';
      if (!ids.has(edge.to)) p.add(`${e}.to`, `names no node (${edge.to})`);
      if (keypad && (kind === 'intent' || kind === 'event')) {
        p.add(`${e}.type`, `a keypad menu follows expression and always edges only (the key pressed is the variable digit), not ${kind}`);
      }
      if (kind === 'event' && !edge.event) p.add(`${e}.event`, 'is required on an event edge');
      if (kind !== 'event' && edge.event !== undefined) p.add(`${e}.event`, 'only applies to event edges');
      if (kind !== 'intent' && edge.capture !== undefined) p.add(`${e}.capture`, 'only applies to intent edges');
      if (kind === 'expression') {
        const conditions = edge.expression?.conditions ?? [];
        if (!conditions.length) p.add(`${e}.expression.conditions`, 'an expression edge needs at least one condition');
        conditions.forEach((c, k) => {
          const cat = `${e}.expression.conditions[${k}]`;
          if (NUMERIC_OPERATORS.has(c.operator)) {
            if (variables[c.variable] !== 'number') {
              p.add(`${cat}.variable`, `is compared numerically; declare it in flow.variables as "number"`);
            }
            if (typeof c.value !== 'number') p.add(`${cat}.value`, `must be a number for ${c.operator}`);
          }
          if ((c.operator === 'exists' || c.operator === 'not_exists') && c.value !== undefined) {
            p.add(`${cat}.value`, `is not used by ${c.operator}`);
          }
          if ((c.operator === 'in' || c.operator === 'not_in') && !Array.isArray(c.value)) {
            p.add(`${cat}.value`, `must be a list for ${c.operator}`);
          }
          if (!['exists', 'not_exists'].includes(c.operator) && c.value === undefined) p.add(`${cat}.value`, 'is required');
        });
      } else if (edge.expression !== undefined) {
        p.add(`${e}.expression`, 'only applies to expression edges');
      }
    });
  });
}

/** Rules shared by an agent and a group's defaults (the inheritable fields). */
function checkInheritable(p: Problems, spec: Partial<AgentSpec>, catalogue: DeploymentCatalogue, prefix = ''): void {
  spec.tools?.forEach((t, i) => {
    if (!catalogue.functions.has(t)) p.add(`${prefix}tools[${i}]`, `is not a registered function (${t})`);
  });
  if (spec.webhook_url) checkUrl(p, `${prefix}webhook_url`, spec.webhook_url);
  checkDestination(p, `${prefix}transfer_number`, spec.transfer_number);
}

/**
 * Every rule that needs the whole agent or the deployment, reported together. Normalises language codes in
 * place. Returns the problems (empty when valid).
 */
export function validateAgent(spec: AgentSpec, catalogue: DeploymentCatalogue): FieldProblem[] {
  const p = new Problems();
  checkLanguages(p, spec, catalogue);
  checkInheritable(p, spec, catalogue);

  const c = spec.conversation;
  if (c) {
    const prompt = c.silence_prompt_seconds === 0 || c.silence_prompt_seconds === undefined ? 8 : c.silence_prompt_seconds;
    const hangup = c.silence_hangup_seconds === 0 || c.silence_hangup_seconds === undefined ? 20 : c.silence_hangup_seconds;
    if (prompt !== -1 && hangup !== -1 && hangup <= prompt) {
      p.add('conversation.silence_hangup_seconds', `must be longer than silence_prompt_seconds (${prompt})`);
    }
    if (c.voicemail === 'message' && !c.voicemail_message) {
      p.add('conversation.voicemail_message', 'is required when voicemail is message');
    }
  }

  if (spec.csat_survey?.enabled && (spec.mode ?? 'conversation') !== 'conversation') {
    p.add('csat_survey.enabled', 'only conversation agents run the end-of-call survey');
  }

  const names = new Map<string, number>();
  spec.tool_configs?.forEach((tc, i) => {
    if (names.has(tc.name)) p.add(`tool_configs[${i}].name`, `repeats tool_configs[${names.get(tc.name)}]`);
    else names.set(tc.name, i);
    checkToolConfig(p, tc, `tool_configs[${i}]`, catalogue);
  });

  if (spec.flow && Object.keys(spec.flow).length) checkFlow(p, spec.flow, spec);

  const fields = new Map<string, number>();
  spec.post_call?.extraction?.forEach((f, i) => {
    if (fields.has(f.name)) p.add(`post_call.extraction[${i}].name`, `repeats extraction[${fields.get(f.name)}]`);
    else fields.set(f.name, i);
    if ((f.type ?? 'string') === 'enum' && !f.options?.length) p.add(`post_call.extraction[${i}].options`, 'are required for an enum field');
    if ((f.type ?? 'string') !== 'enum' && f.options !== undefined) p.add(`post_call.extraction[${i}].options`, 'only apply to enum fields');
  });
  if (spec.post_call?.success) p.list.push(...successCriteriaProblems(spec.post_call.success, 'post_call.success', spec.post_call.extraction ?? []));

  if (new Set(spec.overrides ?? []).size !== (spec.overrides ?? []).length) p.add('overrides', 'lists a field more than once');
  return p.list;
}

export function validateGroup(spec: GroupSpec, catalogue: DeploymentCatalogue): FieldProblem[] {
  const p = new Problems();
  checkInheritable(p, spec.defaults ?? {}, catalogue, 'defaults.');
  return p.list;
}
