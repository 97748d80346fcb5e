import { isDeepStrictEqual } from 'node:util';
import type { EffectiveConfig } from '@parley/contracts';
import { AgentSpec, Capabilities, GroupSpec, INHERITABLE_FIELDS, SealedSecret, SPEC_VERSION, ToolConfig } from './agent-spec';
import { Sealer } from '@parley/persistence';
import { withReadDefaults } from './read-defaults';

const isSealed = (v: unknown): v is SealedSecret => !!v && typeof v === 'object' && 'sealed' in v;

/**
 * PATCH: top-level scalars merge, lists and nested blocks are replaced whole; `flow: {}` removes the flow.
 * Secrets the client cannot read back survive a replaced `tool_configs` list: a tool (matched by name and kind)
 * written without `calendar.api_key` keeps its stored key, and without `request.secret_header_values` keeps its
 * sealed headers.
 */
export function applyPatch<T extends object>(stored: T, patch: Partial<T>): T {
  const next = { ...stored } as Record<string, unknown>;
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (key === 'flow' && value && typeof value === 'object' && !Object.keys(value).length) delete next[key];
    else next[key] = value;
  }
  const before = (stored as { tool_configs?: ToolConfig[] }).tool_configs ?? [];
  const after = (next as { tool_configs?: ToolConfig[] }).tool_configs;
  if ((patch as { tool_configs?: unknown }).tool_configs && after) {
    (next as { tool_configs?: ToolConfig[] }).tool_configs = after.map((tc) => {
      const old = before.find((o) => o.name === tc.name && o.kind === tc.kind);
      if (!old) return tc;
      const merged: ToolConfig = structuredClone(tc);
      if (merged.calendar && !merged.calendar.api_key && old.calendar?.api_key) merged.calendar.api_key = old.calendar.api_key;
      if (merged.request && !merged.request.secret_header_values && old.request?.secret_headers) {
        merged.request.secret_headers = old.request.secret_headers;
      }
      return merged;
    });
  }
  return next as T;
}

/** Seals plaintext credentials in place before storage; fills per-tool defaults. */
export function sealSecrets(spec: AgentSpec, sealer: Sealer): AgentSpec {
  const out = structuredClone(spec);
  for (const tc of out.tool_configs ?? []) {
    const key = tc.calendar?.api_key as { value?: string } | SealedSecret | undefined;
    if (tc.calendar && key && !isSealed(key) && key.value) tc.calendar.api_key = sealer.seal(key.value);
    if (tc.request) {
      if (tc.request.secret_header_values) {
        tc.request.secret_headers = Object.fromEntries(
          Object.entries(tc.request.secret_header_values).map(([name, value]) => [name, sealer.seal(value).sealed]),
        );
        delete tc.request.secret_header_values;
      }
      tc.request.method ??= 'POST';
      tc.request.timeout_seconds ??= 8;
    }
  }
  out.spec_version = SPEC_VERSION;
  return out;
}

/**
 * The tools the runtime executes, for the media worker alone (GetAgentRuntime, an internal RPC): custom functions
 * and transfers with the sealed request headers opened into `secret_header_values`, and the calendar tools with
 * the sealed key opened into `calendar.api_key.value`.
 */
export function runtimeToolConfigs(stored: AgentSpec, sealer: Sealer): ToolConfig[] {
  return (stored.tool_configs ?? []).map((original) => {
    const tc = structuredClone(original);
    if (tc.kind === 'calendar_availability' || tc.kind === 'book_appointment') {
      const key = tc.calendar?.api_key;
      if (tc.calendar) {
        if (isSealed(key)) tc.calendar.api_key = { value: sealer.unseal(key) };
        else if (!key || !('value' in key)) delete tc.calendar.api_key;
      }
    } else {
      delete tc.calendar;
    }
    if (tc.request) {
      const sealed = tc.request.secret_headers ?? {};
      tc.request.secret_header_values = Object.fromEntries(Object.entries(sealed).map(([name, value]) => [name, sealer.unseal({ sealed: value, hint: '' })]));
      delete tc.request.secret_headers;
      delete tc.request.secret_header_names;
    }
    return tc;
  });
}

/** Legacy `simple` (before spec version 2): a model with no retrieval and no functions, read as `custom`. */
function upgradeLegacy(spec: AgentSpec): AgentSpec {
  if ((spec.spec_version ?? 1) >= SPEC_VERSION || spec.autonomy !== 'simple') return spec;
  return {
    ...spec,
    autonomy: 'custom',
    capabilities: { end_call: true, transfer: true, ...spec.capabilities, search_knowledge: false, call_functions: false },
  };
}

/** The public form: secrets shown only as hints and header names, storage details removed, documented defaults filled. */
export function presentAgent(stored: AgentSpec): Omit<AgentSpec, 'spec_version'> {
  const spec = structuredClone(upgradeLegacy(stored));
  delete spec.spec_version;
  for (const tc of spec.tool_configs ?? []) {
    const key = tc.calendar?.api_key;
    if (tc.calendar && key) tc.calendar.api_key = { hint: isSealed(key) ? key.hint : '' };
    if (tc.request) {
      tc.request.secret_header_names = Object.keys(tc.request.secret_headers ?? {});
      delete tc.request.secret_headers;
      delete tc.request.secret_header_values;
    }
  }
  return withReadDefaults(spec);
}

const FULL_CAPABILITIES: Required<Capabilities> = {
  call_functions: true,
  end_call: true,
  max_tool_rounds: 3,
  retrieval_timeout_ms: 0,
  search_knowledge: true,
  transfer: true,
};

/** Capabilities as the runtime applies them: `custom` reads the block (call control only when absent). */
function effectiveCapabilities(autonomy: string, capabilities: Capabilities | undefined): Required<Capabilities> {
  if (autonomy === 'agentic') return FULL_CAPABILITIES;
  if (autonomy === 'simple') {
    return { call_functions: false, end_call: false, max_tool_rounds: 3, retrieval_timeout_ms: 0, search_knowledge: false, transfer: false };
  }
  const c = capabilities ?? { end_call: true, transfer: true };
  return {
    call_functions: c.call_functions ?? false,
    end_call: c.end_call ?? false,
    max_tool_rounds: c.max_tool_rounds || 3,
    retrieval_timeout_ms: c.retrieval_timeout_ms ?? 0,
    search_knowledge: c.search_knowledge ?? false,
    transfer: c.transfer ?? false,
  };
}

/**
 * The inheritable fields calls use: a member takes each from its group's defaults unless the field is in its
 * `overrides` (or the group sets no default); then the spec's defaults apply.
 */
export function resolveEffective(stored: AgentSpec, group: GroupSpec | undefined): EffectiveConfig {
  const spec = upgradeLegacy(stored);
  const out: Record<string, unknown> = {};
  for (const field of INHERITABLE_FIELDS) {
    const fromGroup = group?.defaults?.[field];
    out[field] = fromGroup !== undefined && !spec.overrides?.includes(field) ? fromGroup : spec[field];
  }
  const autonomy = (out['autonomy'] as string | undefined) ?? 'agentic';
  out['autonomy'] = autonomy;
  out['capabilities'] = effectiveCapabilities(autonomy, out['capabilities'] as Capabilities | undefined);
  out['record_calls'] ??= false;
  out['transcribe_calls'] ??= false;
  out['tools'] ??= [];
  out['knowledge_base_ids'] ??= spec.knowledge_base_id ? [spec.knowledge_base_id] : [];
  out['models'] ??= {};
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k];
  return out as EffectiveConfig;
}

/** Fields where a member's effective value differs from its group's default. */
export function groupDifferences(stored: AgentSpec, group: GroupSpec): { field: string; agent: unknown; group: unknown }[] {
  const spec = upgradeLegacy(stored);
  return INHERITABLE_FIELDS.filter((f) => group.defaults?.[f] !== undefined && spec.overrides?.includes(f))
    .filter((f) => !isDeepStrictEqual(spec[f], group.defaults?.[f]))
    .map((f) => ({ field: f, agent: spec[f] ?? null, group: group.defaults?.[f] }));
}
