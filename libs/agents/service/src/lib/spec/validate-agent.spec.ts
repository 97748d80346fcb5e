import { parseEgressAllowlist } from '@parley/egress';
import { validateAgent, DeploymentCatalogue } from './validate-agent';
import { AgentSpec } from './agent-spec';

const catalogue: DeploymentCatalogue = {
  sttProviders: new Set(['deepgram']),
  ttsProviders: new Set(['elevenlabs']),
  functions: new Set(),
  urls: { egress: parseEgressAllowlist('').policy, internalHosts: [], webhookHttpHosts: [] },
};
const fields = (spec: Partial<AgentSpec>) => validateAgent({ name: 'a', languages: [{ code: 'en-US' }], ...spec } as AgentSpec, catalogue).map((p) => p.field);

describe('agent validation: which modes follow a flow', () => {
  const menu = {
    start: 'menu',
    nodes: [
      { id: 'menu', type: 'static' as const, say: 'Press 1.', edges: [{ to: 'done', type: 'expression' as const, expression: { conditions: [{ variable: 'digit', operator: 'eq' as const, value: '1' }] } }] },
      { id: 'done', type: 'static' as const, say: 'Bye.' },
    ],
  };

  it('accepts a flow on a conversation agent with every edge type, and a keypad menu of expression and always edges', () => {
    const talk = {
      start: 'a',
      routing: { instructions: 'Route.' },
      nodes: [{ id: 'a', edges: [{ to: 'a' }, { to: 'a', type: 'event' as const, event: 'go' }, { to: 'a', type: 'always' as const }] }],
    };
    expect(fields({ mode: 'conversation', flow: talk })).toEqual([]);
    expect(fields({ mode: 'keypad', flow: menu })).toEqual([]);
  });

  it('refuses a flow on an agent whose mode follows none', () => {
    expect(fields({ mode: 'normal', flow: menu })).toEqual(['flow']);
    expect(fields({ mode: 'webrtc', flow: menu })).toEqual(['flow']);
  });

  it('refuses intent and event edges and routing on a keypad agent, where nothing would fire them', () => {
    const flow = { ...menu, routing: { model: 'm' }, nodes: [{ ...menu.nodes[0], edges: [{ to: 'done' }, { to: 'done', type: 'event' as const, event: 'x' }] }, menu.nodes[1]] };
    expect(fields({ mode: 'keypad', flow })).toEqual(['flow.routing', 'flow.nodes[0].edges[0].type', 'flow.nodes[0].edges[1].type']);
  });
});

describe('the end-of-call survey (csat_survey)', () => {
  it('runs on conversation agents only: enabled on another mode is refused, off anywhere is fine', () => {
    expect(fields({ csat_survey: { enabled: true } })).toEqual([]);
    expect(fields({ mode: 'conversation', csat_survey: { enabled: true, prompt: 'Rate us, 1 to 5.' } })).toEqual([]);
    for (const mode of ['keypad', 'normal', 'webrtc'] as const) {
      expect(fields({ mode, csat_survey: { enabled: true } })).toContain('csat_survey.enabled');
      expect(fields({ mode, csat_survey: { enabled: false } })).not.toContain('csat_survey.enabled');
    }
  });
});

describe('post-call success (post_call.success), checked as a workflow’s success is', () => {
  const extraction = [{ name: 'booked', description: 'Whether a table was booked', type: 'boolean' as const }];

  it('accepts known end reasons and an extracted field of the agent’s own extraction', () => {
    expect(fields({ post_call: { extraction, success: { end_reasons: ['completed'], extracted_field: { name: 'booked', equals: true } } } })).toEqual([]);
    expect(fields({ post_call: { success: { end_reasons: ['completed', 'transferred'] } } })).toEqual([]);
  });

  it('refuses an unknown end reason, an empty list and a field the agent does not extract', () => {
    expect(fields({ post_call: { extraction, success: { end_reasons: ['completed', 'won'] } } })).toEqual(['post_call.success.end_reasons[1]']);
    expect(fields({ post_call: { success: { end_reasons: [] } } })).toEqual(['post_call.success.end_reasons']);
    expect(fields({ post_call: { extraction, success: { extracted_field: { name: 'paid' } } } })).toEqual(['post_call.success.extracted_field.name']);
    expect(fields({ post_call: { success: { extracted_field: { name: 'booked' } } } })).toEqual(['post_call.success.extracted_field.name']);
  });
});
