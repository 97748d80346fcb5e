import { offeredTools, preToolLine, ToolSettings } from './registry';
import { ToolConfig } from './types';

const configs: ToolConfig[] = [
  { kind: 'custom_function', name: 'lookup', description: 'Look up', pre_tool_message: { 'en-US': 'One moment.', fr: 'Un instant.' }, request: { url: 'https://x.example' } },
  { kind: 'transfer_call', name: 'to_sales', description: 'Sales', transfer: { destination: '+15550100200' } },
  { kind: 'calendar_availability', name: 'slots', description: 'Slots' },
];

const settings = (over: Partial<ToolSettings> = {}): ToolSettings => ({
  conversation: true,
  endCall: true,
  callFunctions: true,
  transfer: true,
  maxToolRounds: 3,
  functionNames: ['weather', 'missing'],
  functions: [{ name: 'weather', description: 'W', parameters: { type: 'object' }, url: 'https://w.example' }],
  toolConfigs: configs,
  fillerPhrase: 'Let me check.',
  transferNumber: '+15550100999',
  ...over,
});

const names = (s: ToolSettings) => offeredTools(s).map((t) => t.definition.name);

describe('tools offered in a turn', () => {
  it('offers everything to an agentic agent; a calendar tool without key or event type and unknown functions are left out', () => {
    expect(names(settings())).toEqual(['end_call', 'record_opt_out', 'lookup', 'to_sales', 'weather']);
  });

  it('gates functions, transfer and end_call by the capabilities; record_opt_out stays', () => {
    expect(names(settings({ callFunctions: false }))).toEqual(['end_call', 'record_opt_out', 'to_sales']);
    expect(names(settings({ transfer: false }))).toEqual(['end_call', 'record_opt_out', 'lookup', 'weather']);
    expect(names(settings({ endCall: false, callFunctions: false, transfer: false }))).toEqual(['record_opt_out']);
  });

  it('offers calendar tools with an event type and an unsealed key, behind call_functions', () => {
    const calendar: ToolConfig[] = [
      { kind: 'calendar_availability', name: 'check_times', description: 'Times', calendar: { api_key: { value: 'k' }, event_type_id: 42 } },
      { kind: 'book_appointment', name: 'book', description: 'Book', calendar: { api_key: { value: 'k' }, event_type_id: 42 } },
      { kind: 'book_appointment', name: 'redacted', description: 'Book', calendar: { api_key: { hint: '1234' }, event_type_id: 42 } },
    ];
    const tools = offeredTools(settings({ toolConfigs: calendar, functionNames: [], transfer: false }));
    expect(tools.map((t) => [t.kind, t.definition.name])).toEqual([
      ['end_call', 'end_call'],
      ['record_opt_out', 'record_opt_out'],
      ['calendar_availability', 'check_times'],
      ['book_appointment', 'book'],
    ]);
    expect(names(settings({ toolConfigs: calendar, callFunctions: false, transfer: false }))).toEqual(['end_call', 'record_opt_out']);
  });

  it('offers a built-in transfer_call to transfer_number when no transfer tool is configured', () => {
    const tools = offeredTools(settings({ toolConfigs: [] }));
    expect(tools.map((t) => t.definition.name)).toEqual(['end_call', 'record_opt_out', 'weather', 'transfer_call']);
    expect(tools.at(-1)).toMatchObject({ kind: 'transfer_call', destination: '+15550100999' });
    expect(names(settings({ toolConfigs: [], transferNumber: '' }))).not.toContain('transfer_call');
  });

  it('speaks the pre-tool message of the call’s language (or its base), else the filler', () => {
    const [, , lookup, transfer] = offeredTools(settings());
    expect(preToolLine(lookup, 'en-US', 'Let me check.')).toBe('One moment.');
    expect(preToolLine(lookup, 'fr-FR', 'Let me check.')).toBe('Un instant.');
    expect(preToolLine(lookup, 'de-DE', 'Let me check.')).toBe('Let me check.');
    expect(preToolLine(transfer, 'en-US', '')).toBe('');
  });
});
