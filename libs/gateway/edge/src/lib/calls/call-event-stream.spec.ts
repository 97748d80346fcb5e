import { EventEmitter } from 'node:events';
import { CallActivity, callsV1, FlowTransition, LIVE } from '@parley/contracts';
import { InProcessBus } from '@parley/messaging';
import { callMessage } from '@parley/testing';
import { streamCallEvents } from './call-event-stream';

const call = (over: Partial<callsV1.Call> = {}): callsV1.Call =>
  callMessage({ id: 'call_1', account_id: 'acme', status: 'in_progress', created_at: '2026-11-25T10:00:00.000Z', ...over });

/** A request and a hijackable reply whose raw stream is recorded as the SSE events it wrote. */
function sse() {
  const written: string[] = [];
  const reply = {
    ended: false,
    hijack: () => undefined,
    getHeaders: () => ({}),
    raw: { writeHead: () => undefined, write: (chunk: string) => written.push(chunk), end: () => (reply.ended = true) },
  };
  const request = { raw: new EventEmitter() };
  const events = () =>
    written
      .filter((w) => w.startsWith('id:'))
      .map((w) => {
        const [, id, event, data] = /^id: (.*)\nevent: (.*)\ndata: (.*)\n\n$/.exec(w) ?? [];
        return { id, event, data: JSON.parse(data) as Record<string, unknown> };
      });
  return { request, reply, events };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('GET /v1/calls/{id}/events', () => {
  it('sends each move of the call’s flow as call.flow.transitioned, with the flow_transition as data', async () => {
    const bus = new InProcessBus();
    bus.open();
    const s = sse();
    await streamCallEvents(bus, 'call_1', async () => call(), s.request as never, s.reply as never);
    const start: FlowTransition = { from: '', to: 'greet', kind: 'start', edge_index: -1, at_ms: 0 };
    const qualified: FlowTransition = { from: 'greet', to: 'offer', kind: 'intent', edge_index: 1, when: 'Wants to upgrade', captured: { seats: 12, annual: true }, at_ms: 5250 };
    const broadcast = (activity: CallActivity, callId = 'call_1') => bus.broadcast(LIVE.callActivity(callId).name, activity);

    await broadcast({ kind: 'flow', call_id: 'call_1', transition: start });
    await broadcast({ kind: 'flow', call_id: 'call_1', transition: qualified });
    await broadcast({ kind: 'flow', call_id: 'call_2', transition: start }, 'call_2');
    await broadcast({ kind: 'status', call: call({ status: 'ended', end_reason: 'completed' }) });
    await flush();

    expect(s.events().map((e) => e.event)).toEqual(['call.status', 'call.flow.transitioned', 'call.flow.transitioned', 'call.status']);
    const [, first, second] = s.events();
    expect(first.data).toEqual({ object: 'flow_transition', call_id: 'call_1', from: '', to: 'greet', kind: 'start', edge_index: -1, at_ms: 0 });
    expect(second.data).toEqual({ object: 'flow_transition', call_id: 'call_1', ...qualified });
    expect(new Set(s.events().map((e) => e.id)).size).toBe(4);
    expect(s.reply.ended).toBe(true);
  });
});
