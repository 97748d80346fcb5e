import { presentAgent } from './agent-document';
import { AgentSpec } from './agent-spec';

const minimal: AgentSpec = { spec_version: 2, name: 'Front desk', languages: [{ code: 'en-US' }] };

describe('agent reads carry the documented defaults', () => {
  it('an agent stored without mode, autonomy or language_detection reads conversation, agentic and off', () => {
    expect(presentAgent(minimal)).toMatchObject({ mode: 'conversation', autonomy: 'agentic', language_detection: 'off' });
  });

  it('the keypad and ring timings read their documented values, and post-call analysis reads summary only', () => {
    expect(presentAgent(minimal)).toMatchObject({ keypad_timeout_seconds: 7, max_no_input: 2, ring_seconds: 30, post_call: { summary: true } });
  });

  it('values the agent was given are kept, including zero and explicit choices', () => {
    const stored: AgentSpec = { ...minimal, mode: 'keypad', autonomy: 'custom', language_detection: 'follow', ring_seconds: 0, post_call: { summary: false } };
    expect(presentAgent(stored)).toMatchObject({ mode: 'keypad', autonomy: 'custom', language_detection: 'follow', ring_seconds: 0, post_call: { summary: false } });
  });

  it('inheritable fields without a value stay absent on the agent (their resolved value is in effective)', () => {
    const read = presentAgent(minimal);
    for (const field of ['record_calls', 'transcribe_calls', 'tools', 'capabilities', 'model', 'webhook_url']) expect(read).not.toHaveProperty(field);
  });

  it('blocks the agent carries read with their nested defaults', () => {
    const stored: AgentSpec = {
      ...minimal,
      conversation: { interrupt_words: 3 },
      post_call: { extraction: [{ name: 'reason', description: 'Why they called' }] },
      tool_configs: [{ kind: 'custom_function', name: 'fn', description: 'f', request: { url: 'https://x.example/{{id}}', parameters: [{ name: 'id', type: 'string' }] } }],
      flow: { start: 'a', nodes: [{ id: 'a', edges: [{ to: 'a', expression: { conditions: [] } }] }] },
    };
    const read = presentAgent(stored);
    expect(read.conversation).toEqual({ interrupt_words: 3, voicemail: 'continue' });
    expect(read.post_call).toEqual({ summary: true, extraction: [{ name: 'reason', description: 'Why they called', type: 'string' }] });
    expect(read.tool_configs?.[0].request).toMatchObject({ method: 'POST', timeout_seconds: 8, parameters: [{ name: 'id', type: 'string', in: 'body' }] });
    expect(read.flow?.nodes?.[0]).toMatchObject({ type: 'llm', edges: [{ type: 'intent', expression: { logic: 'and' } }] });
  });

  it('success criteria read with the default end reasons when they name none', () => {
    const extraction = [{ name: 'booked', description: 'Booked?', type: 'boolean' as const }];
    const read = presentAgent({ ...minimal, post_call: { extraction, success: { extracted_field: { name: 'booked' } } } });
    expect(read.post_call?.success).toEqual({ end_reasons: ['completed', 'hangup', 'transferred'], extracted_field: { name: 'booked' } });
    expect(presentAgent({ ...minimal, post_call: { success: { end_reasons: ['transferred'] } } }).post_call?.success).toEqual({ end_reasons: ['transferred'] });
  });

  it('reading never changes the stored document', () => {
    const stored = structuredClone(minimal);
    presentAgent(stored);
    expect(stored).toEqual(minimal);
  });
});
