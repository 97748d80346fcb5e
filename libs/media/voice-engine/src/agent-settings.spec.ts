import { agentSettings, AgentSpec, RuntimeTools } from './agent-settings';

const defaults = { model: 'default-model', sttProvider: 'deepgram', ttsProvider: 'local', llmProvider: 'openai' };

describe('agent settings for the engine', () => {
  it('applies the spec’s defaults for 0 and absent values, and -1 as never', () => {
    const s = agentSettings({ languages: [{ code: 'en-US' }], conversation: { silence_prompt_seconds: 0, silence_hangup_seconds: -1 } }, {}, defaults);
    expect(s).toMatchObject({ mode: 'conversation', interruptWords: 2, silencePromptSeconds: 8, silenceHangupSeconds: undefined, maxCallSeconds: undefined });
    expect(s).toMatchObject({ keypadTimeoutSeconds: 7, maxNoInput: 2, model: 'default-model' });
  });

  it('takes the model for the deployment’s provider from models, then model, then the deployment default', () => {
    expect(agentSettings({}, { model: 'gpt-x', models: { openai: 'gpt-y' } }, defaults).model).toBe('gpt-y');
    expect(agentSettings({}, { model: 'gpt-x', models: { other: 'gpt-y' } }, defaults).model).toBe('gpt-x');
  });

  it('derives a later language’s prompt from the first one’s, and its recognizer from the first choice', () => {
    const s = agentSettings(
      { languages: [{ code: 'en-US', system_prompt: 'Be kind.', stt_provider: 'openai' }, { code: 'fr-FR', voice_id: 'v2' }] },
      {},
      defaults,
    );
    expect(s.languages[1]).toMatchObject({ systemPrompt: 'Be kind.\n\nSpeak fr-FR with the caller.', sttProvider: 'openai', voiceId: 'v2' });
  });

  it('offers end_call to agentic agents and to custom ones only when their capabilities say so', () => {
    expect(agentSettings({}, { autonomy: 'agentic' }, defaults).endCallTool).toBe(true);
    expect(agentSettings({}, { autonomy: 'custom', capabilities: { end_call: false } }, defaults).endCallTool).toBe(false);
  });

  it('reads the tool capabilities of a custom agent (rounds 1-10, 0 = 3) and gives an agentic one all, with 3 rounds', () => {
    const custom = agentSettings({}, { autonomy: 'custom', capabilities: { call_functions: true, transfer: false, max_tool_rounds: 0 } }, defaults).tools;
    expect(custom).toMatchObject({ callFunctions: true, transfer: false, endCall: false, maxToolRounds: 3, conversation: true });
    expect(agentSettings({}, { autonomy: 'custom', capabilities: { max_tool_rounds: 25 } }, defaults).tools.maxToolRounds).toBe(10);
    expect(agentSettings({}, { autonomy: 'custom' }, defaults).tools).toMatchObject({ endCall: true, transfer: true, callFunctions: false });
    const agentic = agentSettings({}, { autonomy: 'agentic', capabilities: { max_tool_rounds: 7 }, tools: ['weather'], filler_phrase: 'One sec.' }, defaults).tools;
    expect(agentic).toMatchObject({ callFunctions: true, transfer: true, endCall: true, maxToolRounds: 3, functionNames: ['weather'], fillerPhrase: 'One sec.' });
  });

  it('takes the tool configs from the runtime read (secrets in the clear) over the redacted document', () => {
    const spec: AgentSpec = { tool_configs: [{ kind: 'custom_function', name: 'a', description: 'A', request: { url: 'https://x', secret_header_names: ['K'] } }] };
    const runtime: RuntimeTools = {
      tool_configs: [{ kind: 'custom_function', name: 'a', description: 'A', request: { url: 'https://x', secret_header_values: { K: 'v' } } }],
      functions: [],
    };
    expect(agentSettings(spec, {}, defaults, runtime).tools.toolConfigs).toEqual(runtime.tool_configs);
    expect(agentSettings(spec, {}, defaults).tools.toolConfigs).toEqual(spec.tool_configs);
  });
});
