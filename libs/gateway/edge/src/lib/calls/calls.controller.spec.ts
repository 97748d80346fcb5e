import { callsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import type { Bus } from '@parley/messaging';
import { callMessage } from '@parley/testing';
import { CallsClient } from './calls.client';
import { CursorCodec } from '../http/pagination';
import { Recordings } from './recordings';
import { BodyValidationPipe } from '../http/validation';
import { CreateCallDto } from './call.dto';
import { CallsController, callListFilter } from './calls.controller';

const code = (value: string) => {
  try {
    callListFilter({ created_after: value }, 'created_after');
    return undefined;
  } catch (error) {
    return (error as AppError).code;
  }
};

describe('the calls list time filters', () => {
  it.each(['2026-11-24T20:00:00Z', '2026-11-24T20:00:00.123+01:00', '0001-01-01T00:00:00Z'])('take the RFC 3339 time %s', (value) => {
    expect(code(value)).toBeUndefined();
  });

  it.each(['-004713-11-23T23:59:59.999Z', '+275760-09-13T00:00:00Z', '2026-11-24', 'March 7', '1', '2026-02-30T00:00:00Z x'])(
    'refuse %s with 400 invalid_request before any query (PostgreSQL holds no year outside 4713 BC to 294276)',
    (value) => {
      expect(code(value)).toBe('invalid_request');
    },
  );
});

describe('the calls list’s workflow run filter (GET /v1/calls?workflow_run_id=)', () => {
  const RUN = 'wfr_0123456789abcdefghijkl';
  const listing = () => {
    const requests: callsV1.ListCallsRequest[] = [];
    const calls = {
      call: async (_: string, run: (s: unknown, md: unknown) => Promise<unknown>) =>
        run({ listCalls: async (req: callsV1.ListCallsRequest) => (requests.push(req), { data: [callMessage({ id: 'call_1', workflow_run_id: RUN, workflow_recipient_id: 'wrc_1' })], has_more: false, next: '' }) }, {}),
    } as unknown as CallsClient;
    const cursors = { decode: () => undefined } as unknown as CursorCodec;
    return { requests, controller: new CallsController(calls, cursors, {} as Recordings, {} as Bus) };
  };

  it('passes a run id on to the calls service, and lists calls with their run and recipient', async () => {
    const { requests, controller } = listing();
    const page = await controller.list({ accountId: 'acc_1' } as never, { workflow_run_id: RUN });
    expect(requests[0]).toMatchObject({ account_id: 'acc_1', workflow_run_id: RUN });
    expect(page.data[0]).toMatchObject({ id: 'call_1', workflow_run_id: RUN, workflow_recipient_id: 'wrc_1' });
    await controller.list({ accountId: 'acc_1' } as never, {});
    expect(requests[1]).toMatchObject({ workflow_run_id: '' });
  });

  it.each(['wf_0123456789abcdefghijkl', 'wfr_short', 'call_0123456789abcdefghijkl', 'wfr_0123456789abcdefghij-l'])(
    'refuses %s with 400 invalid_request before any query',
    async (value) => {
      const { requests, controller } = listing();
      await expect(controller.list({ accountId: 'acc_1' } as never, { workflow_run_id: value })).rejects.toMatchObject({ code: 'invalid_request' });
      expect(requests).toHaveLength(0);
    },
  );
});

describe('the calls list’s verdict filter (GET /v1/calls?successful=)', () => {
  const listing = () => {
    const requests: callsV1.ListCallsRequest[] = [];
    const calls = {
      call: async (_: string, run: (s: unknown, md: unknown) => Promise<unknown>) =>
        run({ listCalls: async (req: callsV1.ListCallsRequest) => (requests.push(req), { data: [callMessage({ id: 'call_1', successful: true })], has_more: false, next: '' }) }, {}),
    } as unknown as CallsClient;
    return { requests, controller: new CallsController(calls, { decode: () => undefined } as unknown as CursorCodec, {} as Recordings, {} as Bus) };
  };

  it('passes true or false on to the calls service (absent: any call), and shows each call’s verdict', async () => {
    const { requests, controller } = listing();
    const page = await controller.list({ accountId: 'acc_1' } as never, { successful: 'true' });
    await controller.list({ accountId: 'acc_1' } as never, { successful: 'false' });
    await controller.list({ accountId: 'acc_1' } as never, {});
    expect(requests.map((r) => r.successful)).toEqual(['true', 'false', '']);
    expect(page.data[0]).toMatchObject({ id: 'call_1', successful: true });
  });

  it.each(['yes', '1', 'null', 'TRUE'])('refuses successful=%s with 400 invalid_request before any query', async (value) => {
    const { requests, controller } = listing();
    await expect(controller.list({ accountId: 'acc_1' } as never, { successful: value })).rejects.toMatchObject({ code: 'invalid_request' });
    expect(requests).toHaveLength(0);
  });
});

describe('the call resource', () => {
  it('shows null workflow_run_id and workflow_recipient_id on a call no workflow placed', async () => {
    const calls = { call: async () => ({ call: callMessage({ id: 'call_1' }) }) } as unknown as CallsClient;
    const call = await new CallsController(calls, {} as CursorCodec, {} as Recordings, {} as Bus).get({ accountId: 'acc_1' } as never, 'call_1');
    expect(call).toMatchObject({ workflow_run_id: null, workflow_recipient_id: null, successful: null });
  });

  it('never takes a workflow run or recipient from POST /v1/calls: only the workflows service places workflow calls', async () => {
    const requests: callsV1.CreateCallRequest[] = [];
    const calls = {
      deadlineMs: 5000,
      call: async (_: string, run: (s: unknown, md: unknown) => Promise<unknown>) =>
        run({ createCall: async (req: callsV1.CreateCallRequest) => (requests.push(req), { call: callMessage({ id: 'call_1' }) }) }, {}),
    } as unknown as CallsClient;
    const body = { agent_id: 'agt_1', to: '+15551234567', workflow_run_id: 'wfr_0123456789abcdefghijkl', workflow_recipient_id: 'wrc_1' };
    await new CallsController(calls, {} as CursorCodec, {} as Recordings, {} as Bus).create({ accountId: 'acc_1' } as never, body as never, { headers: {} } as never);
    expect(requests[0]).toMatchObject({ workflow_run_id: '', workflow_recipient_id: '' });
    // And the body that names them is refused before it reaches the controller.
    await expect(new BodyValidationPipe().transform(body, { type: 'body', metatype: CreateCallDto, data: undefined })).rejects.toMatchObject({
      code: 'invalid_request',
      errors: [{ field: 'workflow_run_id' }, { field: 'workflow_recipient_id' }],
    });
  });
});

describe('the transcript (GET /v1/calls/{id}/transcript)', () => {
  const turn = (over: Partial<callsV1.Turn>): callsV1.Turn => ({ role: 'user', text: 'Hi', language: 'en-US', start_ms: 1200, end_ms: 1800, interrupted: false, speaker: '', grounding: [], response_latency_ms: 0, ...over });
  const transcriptOf = (turns: callsV1.Turn[], transitions: callsV1.FlowTransition[] = []) => {
    const calls = { call: async () => ({ call: { status: 'ended' }, turns, transitions }) } as unknown as CallsClient;
    return new CallsController(calls, {} as CursorCodec, {} as Recordings, {} as Bus).transcript({ accountId: 'acc_1' } as never, 'call_1');
  };

  it('shows who said each turn of a rendezvous (the seat), and null on calls with one person', async () => {
    const rendezvous = await transcriptOf([turn({ speaker: 'doctor', text: 'Good morning' }), turn({ speaker: 'patient', text: 'Hello' })]);
    expect(rendezvous.turns.map((t) => [t.speaker, t.role, t.text, t.start_seconds])).toEqual([
      ['doctor', 'user', 'Good morning', 1.2],
      ['patient', 'user', 'Hello', 1.2],
    ]);
    expect((await transcriptOf([turn({}), turn({ role: 'assistant' })])).turns.map((t) => t.speaker)).toEqual([null, null]);
  });

  it('shows which knowledge-base documents grounded each answer, best first, and [] on turns without', async () => {
    const sources = [
      { document_id: 'doc_hours', knowledge_base_id: 'kb_faq', title: 'Opening hours', score: 0.92 },
      { document_id: 'doc_returns', knowledge_base_id: 'kb_faq', title: 'Returns policy', score: 0.41 },
    ];
    const transcript = await transcriptOf([turn({ text: 'When do you open?' }), turn({ role: 'assistant', text: 'We open at nine.', grounding: sources })]);

    expect(transcript.turns.map((t) => [t.role, t.text, t.grounding])).toEqual([
      ['user', 'When do you open?', []],
      ['assistant', 'We open at nine.', sources],
    ]);
  });

  it('shows an answer’s response latency in ms, and null on turns without a measurement', async () => {
    const transcript = await transcriptOf([turn({ text: 'Hi' }), turn({ role: 'assistant', text: 'Hello!', response_latency_ms: 742 })]);

    expect(transcript.turns.map((t) => [t.role, t.response_latency_ms])).toEqual([
      ['user', null],
      ['assistant', 742],
    ]);
  });

  it('lists the moves of the call’s flow in order, each field present only when the move has it', async () => {
    const move = (over: Partial<callsV1.FlowTransition>): callsV1.FlowTransition => ({
      from_node: '',
      to_node: 'greet',
      kind: 'start',
      edge_index: -1,
      when: '',
      event: '',
      captured_json: '',
      at_ms: 0,
      ...over,
    });
    const transcript = await transcriptOf(
      [turn({})],
      [
        move({}),
        move({ from_node: 'greet', to_node: 'offer', kind: 'intent', edge_index: 1, when: 'Wants to upgrade', captured_json: '{"seats":12,"annual":true}', at_ms: 5250 }),
        move({ from_node: 'offer', to_node: 'thanks', kind: 'event', edge_index: 0, event: 'payment_received', at_ms: 9100 }),
      ],
    );

    expect(transcript.flow_transitions).toEqual([
      { object: 'flow_transition', call_id: 'call_1', from: '', to: 'greet', kind: 'start', edge_index: -1, at_ms: 0 },
      {
        object: 'flow_transition',
        call_id: 'call_1',
        from: 'greet',
        to: 'offer',
        kind: 'intent',
        edge_index: 1,
        when: 'Wants to upgrade',
        captured: { seats: 12, annual: true },
        at_ms: 5250,
      },
      { object: 'flow_transition', call_id: 'call_1', from: 'offer', to: 'thanks', kind: 'event', edge_index: 0, event: 'payment_received', at_ms: 9100 },
    ]);
    expect((await transcriptOf([turn({})])).flow_transitions).toEqual([]);
  });
});

describe('injecting an event (POST /v1/calls/{id}/events)', () => {
  it('answers the call_event with whether the running conversation received it', async () => {
    const inject = async (delivered: boolean) => {
      const calls = { call: async () => ({ event_id: 'cev_1', created_at: '2026-11-25T10:00:00.000Z', delivered }) } as unknown as CallsClient;
      return new CallsController(calls, {} as CursorCodec, {} as Recordings, {} as Bus).inject({ accountId: 'acc_1' } as never, 'call_1', { name: 'payment_received', payload: { amount: 42 } });
    };

    expect(await inject(true)).toEqual({
      object: 'call_event',
      id: 'cev_1',
      call_id: 'call_1',
      name: 'payment_received',
      payload: { amount: 42 },
      created_at: '2026-11-25T10:00:00.000Z',
      delivered: true,
    });
    expect((await inject(false)).delivered).toBe(false);
  });
});
