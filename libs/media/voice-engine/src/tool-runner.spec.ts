import { ManualClock } from './clock';
import { ToolCallReport, ToolRunner } from './tool-runner';
import { OfferedTool } from './tools';

const definition = (name: string) => ({ name, description: name, parameters: { type: 'object', properties: {} } });
const tools: OfferedTool[] = [
  { kind: 'end_call', definition: definition('end_call') },
  { kind: 'record_opt_out', definition: definition('record_opt_out') },
  { kind: 'transfer_call', definition: definition('to_sales'), destination: '+15550100200', preToolMessage: { 'en-US': 'Putting you through.' } },
];

function rig(host: { transfer?: (d: string) => Promise<void>; recordOptOut?: () => Promise<void> } = {}) {
  const reports: ToolCallReport[] = [];
  const transfers: string[] = [];
  let transferred = false;
  const runner = new ToolRunner({
    clock: new ManualClock(),
    network: undefined,
    callId: 'call_1',
    fillerPhrase: 'One moment.',
    transfer: host.transfer ?? (async (d) => void transfers.push(d)),
    recordOptOut: host.recordOptOut,
    report: (r) => void reports.push(r),
    onTransferred: () => (transferred = true),
    log: () => undefined,
  });
  return { runner, reports, transfers, transferred: () => transferred };
}
const call = (name: string, args = '') => ({ id: 'c1', name, arguments: args });
const signal = () => new AbortController().signal;

describe('ToolRunner', () => {
  it('speaks a tool’s pre-tool message in the call’s language, else the filler, and nothing for opt-out alone', () => {
    const { runner } = rig();
    expect(runner.lineFor([call('to_sales')], tools, 'en-US')).toBe('Putting you through.');
    expect(runner.lineFor([call('to_sales')], tools, 'de-DE')).toBe('One moment.');
    expect(runner.lineFor([call('record_opt_out')], tools, 'en-US')).toBe('');
  });

  it('transfers to the configured destination once what was said has been heard, and reports it', async () => {
    const { runner, reports, transfers, transferred } = rig();
    let heard!: () => void;
    const played = new Promise<void>((r) => (heard = r));
    const outcome = runner.run(call('to_sales', '{"destination":"+19995550000"}'), tools, signal(), () => played);
    await new Promise((r) => setImmediate(r));
    expect(transfers).toEqual([]);
    heard();
    expect(await outcome).toMatchObject({ ok: true });
    expect(transfers).toEqual(['+15550100200']);
    expect(transferred()).toBe(true);
    expect(reports).toEqual([{ name: 'to_sales', kind: 'transfer_call', arguments: '{"destination":"+19995550000"}', ok: true }]);
  });

  it('answers the model and reports when a tool is unknown or an opt-out cannot be recorded', async () => {
    const { runner, reports } = rig();
    expect(await runner.run(call('nope'), tools, signal(), async () => undefined)).toMatchObject({ ok: false, result: 'There is no tool named "nope".' });
    expect(await runner.run(call('record_opt_out'), tools, signal(), async () => undefined)).toMatchObject({ ok: false, error: 'not available' });
    expect(reports).toEqual([
      { name: 'nope', kind: 'unknown', arguments: '{}', ok: false, error: 'unknown tool' },
      { name: 'record_opt_out', kind: 'record_opt_out', arguments: '{}', ok: false, error: 'not available' },
    ]);
  });

  it('keeps going when the host cannot take a report', () => {
    const runner = new ToolRunner({
      clock: new ManualClock(),
      network: undefined,
      callId: '',
      fillerPhrase: '',
      transfer: async () => undefined,
      report: () => {
        throw new Error('bus down');
      },
      onTransferred: () => undefined,
      log: () => undefined,
    });
    expect(() => runner.report({ name: 'end_call', kind: 'end_call', arguments: '{}', ok: true })).not.toThrow();
  });
});
