import { applyPatch, groupDifferences, presentAgent, resolveEffective, runtimeToolConfigs, sealSecrets } from './agent-document';
import { AgentSpec } from './agent-spec';
import { normalizeLanguage } from './languages';
import { Sealer } from '@parley/persistence';

const sealer = new Sealer('unit-test-secret-key-that-is-long-enough');

describe('language codes', () => {
  it.each([
    ['hi', 'hi-IN'],
    ['hi-IN', 'hi-IN'],
    ['hi_IN', 'hi-IN'],
    ['Hindi', 'hi-IN'],
    ['english', 'en-US'],
    ['en-GB', 'en-GB'],
    ['pt_BR', 'pt-BR'],
    ['zh', 'zh-CN'],
  ])('normalises %s to %s', (input, expected) => expect(normalizeLanguage(input)).toBe(expected));

  it.each(['klingonish', 'xx', '', '12'])('refuses %p', (input) => expect(normalizeLanguage(input)).toBeUndefined());
});

describe('sealing', () => {
  it('round-trips and shows only the last four characters', () => {
    const sealed = sealer.seal('cal_live_abcdef1234');
    expect(sealed.hint).toBe('1234');
    expect(sealed.sealed).not.toContain('abcdef');
    expect(sealer.unseal(sealed)).toBe('cal_live_abcdef1234');
  });

  it('refuses a tampered value and another deployment key', () => {
    const sealed = sealer.seal('secret');
    const parts = sealed.sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => sealer.unseal({ ...sealed, sealed: parts.join('.') })).toThrow();
    expect(() => new Sealer('another-deployment-secret-key-0000000').unseal(sealed)).toThrow();
  });
});

const agent = (extra: Partial<AgentSpec> = {}): AgentSpec => ({ name: 'A', languages: [{ code: 'en-US' }], ...extra });

describe('PATCH semantics', () => {
  it('merges top-level scalars, replaces blocks and lists, and {} removes the flow', () => {
    const stored = agent({ description: 'd', conversation: { interrupt_words: 3, voicemail: 'hangup' }, flow: { start: 'a', nodes: [{ id: 'a' }] } });
    const next = applyPatch(stored, { conversation: { interrupt_words: 4 }, flow: {} });
    expect(next).toEqual(agent({ description: 'd', conversation: { interrupt_words: 4 } }));
  });

  it('keeps stored credentials when a replaced tool omits them, and replaces them when sent', () => {
    const stored = sealSecrets(
      agent({
        tool_configs: [
          { kind: 'book_appointment', name: 'book', description: 'b', calendar: { api_key: { value: 'key-1234' } } },
          { kind: 'custom_function', name: 'fn', description: 'f', request: { url: 'https://x', secret_header_values: { 'X-Key': 'v' } } },
        ],
      }),
      sealer,
    );
    const kept = applyPatch(stored, {
      tool_configs: [
        { kind: 'book_appointment', name: 'book', description: 'b2', calendar: {} },
        { kind: 'custom_function', name: 'fn', description: 'f', request: { url: 'https://x' } },
      ],
    });
    expect(presentAgent(kept).tool_configs?.[0].calendar?.api_key).toEqual({ hint: '1234' });
    expect(presentAgent(kept).tool_configs?.[1].request?.secret_header_names).toEqual(['X-Key']);
    const replaced = sealSecrets(
      applyPatch(stored, { tool_configs: [{ kind: 'custom_function', name: 'fn', description: 'f', request: { url: 'https://x', secret_header_values: {} } }] }),
      sealer,
    );
    expect(presentAgent(replaced).tool_configs?.[0].request?.secret_header_names).toEqual([]);
  });
});

describe('reading back', () => {
  it('reads a legacy simple agent as custom without retrieval or functions', () => {
    const legacy = agent({ autonomy: 'simple', capabilities: { end_call: true, call_functions: true } });
    expect(presentAgent(legacy)).toMatchObject({ autonomy: 'custom', capabilities: { end_call: true, call_functions: false, search_knowledge: false } });
    expect(resolveEffective(legacy, undefined).capabilities).toMatchObject({ call_functions: false, search_knowledge: false, end_call: true });
  });

  it('keeps the current meaning of simple for documents written now', () => {
    const current = sealSecrets(agent({ autonomy: 'simple' }), sealer);
    expect(presentAgent(current).autonomy).toBe('simple');
    expect(resolveEffective(current, undefined).capabilities).toMatchObject({ call_functions: false, end_call: false });
  });
});

describe('inheritance', () => {
  const group = { name: 'G', defaults: { model: 'group-model', temperature: 0.2, tools: ['a'] } };

  it('takes defaults unless overridden', () => {
    const member = agent({ model: 'own', temperature: 0.9, overrides: ['temperature'], group_id: 'grp_1' });
    expect(resolveEffective(member, group)).toMatchObject({ model: 'group-model', temperature: 0.9, tools: ['a'] });
  });

  it('lists only overridden fields whose values differ', () => {
    const member = agent({ model: 'group-model', temperature: 0.9, tools: ['b'], overrides: ['model', 'temperature'] });
    expect(groupDifferences(member, group)).toEqual([{ field: 'temperature', agent: 0.9, group: 0.2 }]);
  });
});

describe('runtime tools (GetAgentRuntime)', () => {
  it('opens sealed request headers and calendar keys for the media worker', () => {
    const calendar = { provider: 'cal.com', event_type_id: 42, duration_minutes: 30, timezone: 'Europe/Oslo' };
    const stored = sealSecrets(
      agent({
        tool_configs: [
          { kind: 'custom_function', name: 'fn', description: 'f', request: { url: 'https://x', secret_header_values: { 'X-Key': 'k-123456' } } },
          { kind: 'transfer_call', name: 'to_sales', description: 't', transfer: { destination: '+15550100200' } },
          { kind: 'calendar_availability', name: 'cal', description: 'c', calendar: { ...calendar, api_key: { value: 'cal_live_1234' } } },
          { kind: 'book_appointment', name: 'book', description: 'b', calendar: { ...calendar, api_key: { value: 'cal_live_5678' } } },
        ],
      }),
      sealer,
    );
    expect(JSON.stringify(stored)).not.toContain('k-123456');
    expect(JSON.stringify(stored)).not.toContain('cal_live_1234');
    const runtime = runtimeToolConfigs(stored, sealer);
    expect(runtime.map((t) => t.name)).toEqual(['fn', 'to_sales', 'cal', 'book']);
    expect(runtime[2].calendar).toEqual({ ...calendar, api_key: { value: 'cal_live_1234' } });
    expect(runtime[3].calendar?.api_key).toEqual({ value: 'cal_live_5678' });
    expect(JSON.stringify(presentAgent(stored).tool_configs)).not.toContain('cal_live');
    expect(runtime[0].request).toEqual({ url: 'https://x', method: 'POST', timeout_seconds: 8, secret_header_values: { 'X-Key': 'k-123456' } });
    expect(presentAgent(stored).tool_configs?.[0].request?.secret_header_values).toBeUndefined();
  });
});
