import 'reflect-metadata';
import { EventEmitter } from 'node:events';
import { APP_FILTER, APP_GUARD, APP_PIPE, Reflector } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { LIVE, WebhookEvent, workflowsV1, WorkflowRunActivity } from '@parley/contracts';
import { GatewayConfig } from '@parley/config';
import { Bus, InProcessBus } from '@parley/messaging';
import { AppError } from '@parley/rpc';
import { BUS } from '@parley/runtime';
import { ApiKeysRepository, Principal } from '../auth/api-keys.repository';
import { AuthGuard } from '../auth/auth.guard';
import { CallsClient } from '../calls/calls.client';
import { PERMISSION_KEY } from '../auth/permissions';
import { IdempotencyStore } from '../edge/idempotency.store';
import { MemoryRateLimitStore, RateLimiter } from '../edge/rate-limit';
import { InputHygieneGuard } from '../http/input-hygiene.guard';
import { NoBodyGuard } from '../http/no-body';
import { CursorCodec } from '../http/pagination';
import { ProblemFilter } from '../http/problem';
import { QueryGuard } from '../http/query.guard';
import { inspectResourceId, resourceIdShape } from '../http/resource-id';
import { configureGatewayHttp, gatewayAdapterOptions } from '../http/setup';
import { BodyValidationPipe } from '../http/validation';
import { fakeRpcClient } from '../testing/fake-rpc-client';
import { gatewayOpenApiDocument } from '../testing/gateway-openapi';
import { AddRecipientsDto, StartRunDto, WorkflowInputDto, WorkflowPatchDto } from './workflow.dto';
import { csvRecordCount, WorkflowsController } from './workflows.controller';
import { WorkflowsClient } from './workflows.client';

type Service = workflowsV1.WorkflowsServiceClient;

const WF = 'wf_0123456789abcdefghijkl';
const RUN = 'wfr_0123456789abcdefghijkl';
const AGENT = 'agt_0123456789abcdefghijkl';
const T0 = '2026-01-01T00:00:00.000Z';

const SPEC = {
  name: 'Reminders',
  description: '',
  agent_id: AGENT,
  timezone: 'UTC',
  calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00', holidays: [] },
  concurrency: 5,
  retry: {},
  recipient_variables: [],
  success: { end_reasons: ['completed', 'hangup', 'transferred'] },
  metadata: {},
};

const workflow = (over: Partial<workflowsV1.Workflow> = {}): workflowsV1.Workflow => ({
  id: WF,
  account_id: 'acme',
  spec_json: JSON.stringify(SPEC),
  created_at: T0,
  updated_at: T0,
  ...over,
});

const counts = { total: 3, pending: 1, in_progress: 1, retrying: 0, succeeded: 1, failed: 0, suppressed: 0, cancelled: 0 };

const run = (over: Partial<workflowsV1.Run> = {}): workflowsV1.Run => ({
  id: RUN,
  workflow_id: WF,
  status: 'running',
  start_at: T0,
  started_at: '',
  completed_at: '',
  recipients_complete: true,
  counts,
  metadata: {},
  created_at: T0,
  updated_at: T0,
  ...over,
});

const recipient = (over: Partial<workflowsV1.Recipient> = {}): workflowsV1.Recipient => ({
  id: 'wfrc_0123456789abcdefghijkl',
  run_id: RUN,
  to: '+15551234567',
  timezone: 'Europe/Paris',
  variables: { first_name: 'Ada' },
  metadata: {},
  state: 'pending',
  attempts: 0,
  last_outcome: '',
  reason: '',
  call_ids: [],
  next_attempt_at: '',
  created_at: T0,
  updated_at: T0,
  ...over,
});

const PRESENTED_RUN = {
  id: RUN,
  object: 'workflow_run',
  workflow_id: WF,
  status: 'running',
  start_at: T0,
  started_at: null,
  completed_at: null,
  recipients_complete: true,
  counts,
  metadata: {},
  created_at: T0,
  updated_at: T0,
};

const who = { accountId: 'acme', role: 'member', keyId: 'key_1' } as Principal;
const cursors = new CursorCodec('unit-test-secret-key-0000000000000001');

function controller(answers: Partial<Record<keyof Service, unknown>>) {
  const { client, requests } = fakeRpcClient<Service, WorkflowsClient>(answers);
  return { c: new WorkflowsController(client, cursors, new InProcessBus()), requests };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: AppError) => ({ code: e.code, errors: e.errors }),
  );

/** A body through BodyValidationPipe, as the routes receive it: the refusal's code and fields, or the instance. */
const pipe = new BodyValidationPipe();
async function validated(metatype: new () => object, body: unknown) {
  try {
    return { value: await pipe.transform(body, { type: 'body', metatype, data: undefined }) };
  } catch (e) {
    const error = e as AppError;
    return { code: error.code, fields: (error.errors ?? []).map((p) => p.field) };
  }
}

const recipients = (n: number) => Array.from({ length: n }, (_, i) => ({ to: `+1555${String(i).padStart(7, '0')}` }));

describe('WorkflowsController: workflows', () => {
  it('creates a workflow, forwarding the body as spec_json, and presents it with its defaults', async () => {
    const { c, requests } = controller({ createWorkflow: { workflow: workflow() } });
    const body = { name: 'Reminders', agent_id: AGENT, concurrency: 5 };
    const res = await c.create(who, body as WorkflowInputDto);
    expect(requests.createWorkflow).toEqual({ account_id: 'acme', spec_json: JSON.stringify(body) });
    expect(res).toEqual({ id: WF, object: 'workflow', ...SPEC, created_at: T0, updated_at: T0 });
    expect(Object.keys(res).slice(0, 3)).toEqual(['id', 'object', 'name']);
  });

  it('keeps the record’s id and object over anything the definition holds', async () => {
    const { c } = controller({ getWorkflow: { workflow: workflow({ spec_json: JSON.stringify({ ...SPEC, id: 'x', object: 'y' }) }) } });
    expect(await c.get(who, WF)).toMatchObject({ id: WF, object: 'workflow' });
  });

  it('lists workflows with a cursor wrapping the service’s next position, bound to the list and the account', async () => {
    const { c, requests } = controller({ listWorkflows: { workflows: [workflow({ id: 'wf_b' }), workflow({ id: 'wf_a' })], has_more: true, next: 'p:2' } });
    const page = await c.list(who, { limit: '2' });
    expect(requests.listWorkflows).toEqual({ account_id: 'acme', limit: 2, after: '' });
    expect(page).toMatchObject({ object: 'list', has_more: true, data: [{ id: 'wf_b', object: 'workflow' }, { id: 'wf_a' }] });
    expect(cursors.decode('workflows', 'acme', String(page.next_cursor))).toBe('p:2');
    expect(() => cursors.decode('workflows', 'globex', String(page.next_cursor))).toThrow();
    await c.list(who, { starting_after: page.next_cursor });
    expect(requests.listWorkflows).toEqual({ account_id: 'acme', limit: 20, after: 'p:2' });
    expect(await refusal(c.list(who, { starting_after: 'forged.cursor' }))).toMatchObject({ code: 'validation_error' });
  });

  it('answers the last page without next_cursor', async () => {
    const { c } = controller({ listWorkflows: { workflows: [workflow()], has_more: false, next: '' } });
    expect(await c.list(who, {})).toEqual({ object: 'list', data: [expect.objectContaining({ id: WF })], has_more: false });
  });

  it('retrieves, patches (nulls forwarded to clear) and deletes', async () => {
    const { c, requests } = controller({
      getWorkflow: { workflow: workflow() },
      updateWorkflow: { workflow: workflow({ spec_json: JSON.stringify({ ...SPEC, concurrency: 9 }) }) },
      deleteWorkflow: { id: WF },
    });
    expect(await c.get(who, WF)).toMatchObject({ id: WF, name: 'Reminders' });
    expect(requests.getWorkflow).toEqual({ account_id: 'acme', id: WF });
    const patch = { concurrency: 9, retry: null, description: null } as unknown as WorkflowPatchDto;
    expect(await c.update(who, WF, patch)).toMatchObject({ concurrency: 9 });
    expect(requests.updateWorkflow).toEqual({ account_id: 'acme', id: WF, patch_json: '{"concurrency":9,"retry":null,"description":null}' });
    expect(await c.remove(who, WF)).toEqual({ id: WF, object: 'workflow', deleted: true });
    expect(requests.deleteWorkflow).toEqual({ account_id: 'acme', id: WF });
  });

  it('passes the service’s refusals on unchanged (422 field problems, 409 while a run is active)', async () => {
    const invalid = AppError.validation([{ field: 'agent_id', message: 'is not an agent of this account' }]);
    const conflict = new AppError('conflict', 'A run of this workflow is active.');
    const failing = (error: AppError) =>
      ({ call: () => Promise.reject(error) }) as unknown as WorkflowsClient;
    expect(await refusal(new WorkflowsController(failing(invalid), cursors, new InProcessBus()).create(who, { name: 'x', agent_id: AGENT }))).toEqual({
      code: 'validation_error',
      errors: [{ field: 'agent_id', message: 'is not an agent of this account' }],
    });
    expect(await refusal(new WorkflowsController(failing(conflict), cursors, new InProcessBus()).remove(who, WF))).toMatchObject({ code: 'conflict' });
  });
});

describe('WorkflowsController: runs', () => {
  it('starts a run with inline recipients: JSON page, complete by default, 201 shape with the page outcome', async () => {
    const { c, requests } = controller({ startRun: { run: run(), page: { added: 2, suppressed: 1 } } });
    const body = { recipients: [{ to: '+15551234567', variables: { first_name: 'Ada' } }, { to: '+15557654321', timezone: 'Europe/Paris' }], metadata: { c: '1' } };
    const res = await c.startRun(who, WF, body as StartRunDto);
    expect(requests.startRun).toEqual({
      account_id: 'acme',
      workflow_id: WF,
      recipients: { recipients_json: JSON.stringify(body.recipients), recipients_csv: '' },
      start_at: '',
      recipients_complete: true,
      metadata: { c: '1' },
    });
    expect(res).toEqual({ ...PRESENTED_RUN, page: { added: 2, suppressed: 1 } });
  });

  it('starts a run from CSV text at a start time; with recipients_complete false it may carry none', async () => {
    const { c, requests } = controller({ startRun: { run: run({ status: 'scheduled', recipients_complete: false }), page: { added: 0, suppressed: 0 } } });
    await c.startRun(who, WF, { recipients_csv: 'to,first_name\n+15551234567,Ada\n', start_at: '2026-02-01T09:00:00Z' });
    expect(requests.startRun).toMatchObject({ recipients: { recipients_json: '', recipients_csv: 'to,first_name\n+15551234567,Ada\n' }, start_at: '2026-02-01T09:00:00Z' });
    const res = await c.startRun(who, WF, { recipients_complete: false });
    expect(requests.startRun).toMatchObject({ recipients: undefined, recipients_complete: false });
    expect(res).toMatchObject({ status: 'scheduled', recipients_complete: false, page: { added: 0, suppressed: 0 } });
  });

  it('refuses both recipients and recipients_csv, none on a complete run, and CSV of more than 1000 rows (422), calling nothing', async () => {
    const { c, requests } = controller({});
    expect(await refusal(c.startRun(who, WF, { recipients: [{ to: '+1' }], recipients_csv: 'to\n+1' }))).toEqual({
      code: 'validation_error',
      errors: [{ field: 'recipients_csv', message: 'cannot be given with recipients; give one of them' }],
    });
    expect(await refusal(c.startRun(who, WF, {}))).toMatchObject({ code: 'validation_error', errors: [{ field: 'recipients' }] });
    expect(await refusal(c.startRun(who, WF, { recipients_complete: true, metadata: {} }))).toMatchObject({ errors: [{ field: 'recipients' }] });
    const rows = (n: number) => `to\n${Array.from({ length: n }, (_, i) => `+1555${i}`).join('\n')}\n`;
    expect(await refusal(c.startRun(who, WF, { recipients_csv: rows(1001) }))).toMatchObject({ errors: [{ field: 'recipients_csv' }] });
    expect(requests.startRun).toBeUndefined();
    const ok = controller({ startRun: { run: run(), page: { added: 1000, suppressed: 0 } } });
    await ok.c.startRun(who, WF, { recipients_csv: rows(1000) });
    expect(ok.requests.startRun).toBeDefined();
  });

  it('counts CSV records as RFC 4180 reads them: quoted line breaks, CRLF and blank lines', () => {
    expect(csvRecordCount('to\n+1\n+2')).toBe(3);
    expect(csvRecordCount('to,note\r\n+1,"two\nlines"\r\n\r\n+2,"say ""hi"""\r\n')).toBe(3);
    expect(csvRecordCount('')).toBe(0);
    expect(csvRecordCount('a\nb\nc\nd\ne', 2)).toBe(3);
  });

  it('lists runs with a cursor per workflow, presents counts and nulls', async () => {
    const { c, requests } = controller({
      listRuns: { runs: [run({ started_at: T0, status: 'completed', completed_at: T0, counts: undefined })], has_more: true, next: 'r:1' },
    });
    const page = await c.listRuns(who, WF, {});
    expect(requests.listRuns).toEqual({ account_id: 'acme', workflow_id: WF, limit: 20, after: '' });
    expect(page.data[0]).toMatchObject({ status: 'completed', started_at: T0, completed_at: T0, counts: { total: 0, cancelled: 0 } });
    expect(cursors.decode(`workflow_runs:${WF}`, 'acme', String(page.next_cursor))).toBe('r:1');
    expect(await refusal(c.listRuns(who, 'wf_other0123456789abcdefg', { starting_after: page.next_cursor }))).toMatchObject({ code: 'validation_error' });
  });

  it('retrieves a run; a run id that cannot be one is 404 without asking the service', async () => {
    const { c, requests } = controller({ getRun: { run: run() } });
    expect(await c.getRun(who, WF, RUN)).toEqual(PRESENTED_RUN);
    expect(requests.getRun).toEqual({ account_id: 'acme', workflow_id: WF, run_id: RUN });
    const bad = controller({});
    for (const id of ['nope', 'wf_0123456789abcdefghijkl', `${RUN}x`]) {
      expect(await refusal(bad.c.getRun(who, WF, id))).toMatchObject({ code: 'not_found' });
      expect(await refusal(bad.c.pause(who, WF, id))).toMatchObject({ code: 'not_found' });
      expect(await refusal(bad.c.addRecipients(who, WF, id, { recipients: [{ to: '+1' }] }))).toMatchObject({ code: 'not_found' });
      expect(await refusal(bad.c.listRecipients(who, WF, id, {}))).toMatchObject({ code: 'not_found' });
    }
    expect(Object.keys(bad.requests)).toEqual([]);
  });

  it('adds a page of recipients (not the last by default), and a last page that carries none', async () => {
    const { c, requests } = controller({ addRecipients: { run: run({ recipients_complete: false }), page: { added: 1, suppressed: 0 } } });
    const res = await c.addRecipients(who, WF, RUN, { recipients: [{ to: '+15551234567' }] });
    expect(requests.addRecipients).toEqual({
      account_id: 'acme',
      workflow_id: WF,
      run_id: RUN,
      recipients: { recipients_json: '[{"to":"+15551234567"}]', recipients_csv: '' },
      complete: false,
    });
    expect(res).toMatchObject({ object: 'workflow_run', recipients_complete: false, page: { added: 1, suppressed: 0 } });
    await c.addRecipients(who, WF, RUN, { complete: true });
    expect(requests.addRecipients).toMatchObject({ recipients: undefined, complete: true });
    expect(await refusal(c.addRecipients(who, WF, RUN, {}))).toMatchObject({ code: 'validation_error', errors: [{ field: 'recipients' }] });
    expect(await refusal(c.addRecipients(who, WF, RUN, { recipients: [], recipients_csv: 'to' }))).toMatchObject({ errors: [{ field: 'recipients_csv' }] });
  });

  it('lists recipients with a state filter, presenting empty fields as null; an unknown state is 400', async () => {
    const finished = recipient({ state: 'failed', attempts: 3, last_outcome: 'no_answer', reason: 'retries exhausted', call_ids: ['call_1', 'call_2', 'call_3'] });
    const { c, requests } = controller({ listRecipients: { recipients: [recipient(), finished], has_more: true, next: '42' } });
    const page = await c.listRecipients(who, WF, RUN, { state: 'failed', limit: '2' });
    expect(requests.listRecipients).toEqual({ account_id: 'acme', workflow_id: WF, run_id: RUN, state: 'failed', limit: 2, after: '' });
    expect(page.data[0]).toEqual({
      id: 'wfrc_0123456789abcdefghijkl',
      object: 'workflow_recipient',
      run_id: RUN,
      to: '+15551234567',
      timezone: 'Europe/Paris',
      variables: { first_name: 'Ada' },
      metadata: {},
      state: 'pending',
      attempts: 0,
      last_outcome: null,
      reason: null,
      call_ids: [],
      next_attempt_at: null,
      created_at: T0,
      updated_at: T0,
    });
    expect(page.data[1]).toMatchObject({ state: 'failed', attempts: 3, last_outcome: 'no_answer', reason: 'retries exhausted', call_ids: ['call_1', 'call_2', 'call_3'] });
    expect(cursors.decode(`workflow_recipients:${RUN}`, 'acme', String(page.next_cursor))).toBe('42');
    expect(await refusal(c.listRecipients(who, WF, RUN, { state: 'done' }))).toMatchObject({ code: 'invalid_request' });
  });

  it('pauses, resumes and cancels, answering the run; the service’s 409 passes through', async () => {
    const { c, requests } = controller({
      pauseRun: { run: run({ status: 'paused' }) },
      resumeRun: { run: run({ status: 'running' }) },
      cancelRun: { run: run({ status: 'cancelled', completed_at: T0 }) },
    });
    const ids = { account_id: 'acme', workflow_id: WF, run_id: RUN };
    expect(await c.pause(who, WF, RUN)).toMatchObject({ object: 'workflow_run', status: 'paused' });
    expect(requests.pauseRun).toEqual(ids);
    expect(await c.resume(who, WF, RUN)).toMatchObject({ status: 'running' });
    expect(requests.resumeRun).toEqual(ids);
    expect(await c.cancel(who, WF, RUN)).toMatchObject({ status: 'cancelled', completed_at: T0 });
    expect(requests.cancelRun).toEqual(ids);
    const conflict = { call: () => Promise.reject(new AppError('conflict', 'The run is not paused.')) } as unknown as WorkflowsClient;
    expect(await refusal(new WorkflowsController(conflict, cursors, new InProcessBus()).resume(who, WF, RUN))).toMatchObject({ code: 'conflict' });
  });
});

describe('workflow bodies (BodyValidationPipe)', () => {
  const base = { name: 'Reminders', agent_id: AGENT };
  const full = {
    ...base,
    description: 'd',
    from: '+15557654321',
    timezone: 'America/New_York',
    calling_window: { days: ['mon', 'sat'], start: '08:30', end: '20:00', holidays: ['2026-12-25'] },
    concurrency: 1000,
    retry: { busy: { retries: 10, wait_seconds: 60 }, no_answer: { retries: 0, wait_seconds: 604800 }, voicemail: { retries: 1, wait_seconds: 3600 }, carrier_error: { retries: 2, wait_seconds: 300 } },
    recipient_variables: [{ name: 'first_name', type: 'string', required: true }, { name: 'amount', type: 'number' }],
    success: { end_reasons: ['completed'], extracted_field: { name: 'booked', equals: true } },
    metadata: { team: 'clinic' },
  };

  it('accepts every field of the workflow in range', async () => {
    expect(await validated(WorkflowInputDto, full)).toEqual({ value: expect.any(WorkflowInputDto) });
    expect(await validated(WorkflowInputDto, base)).toEqual({ value: expect.any(WorkflowInputDto) });
  });

  it.each([
    ['an unknown field', { ...base, colour: 'red' }, 'invalid_request', ['colour']],
    ['an unknown nested field', { ...base, retry: { busy: { retries: 1, wait_seconds: 60, jitter: 1 } } }, 'invalid_request', ['retry.busy.jitter']],
    ['an unknown outcome', { ...base, retry: { hangup: { retries: 1, wait_seconds: 60 } } }, 'invalid_request', ['retry.hangup']],
    ['no name', { agent_id: AGENT }, 'validation_error', ['name']],
    ['no agent', { name: 'x' }, 'validation_error', ['agent_id']],
    ['an agent id of another kind', { ...base, agent_id: 'kb_0123456789abcdefghijkl' }, 'validation_error', ['agent_id']],
    ['a bad weekday', { ...base, calling_window: { days: ['mon', 'someday'] } }, 'validation_error', ['calling_window.days']],
    ['a repeated weekday', { ...base, calling_window: { days: ['mon', 'mon'] } }, 'validation_error', ['calling_window.days']],
    ['a bad opening time', { ...base, calling_window: { start: '9:00' } }, 'validation_error', ['calling_window.start']],
    ['a bad closing time', { ...base, calling_window: { end: '24:00' } }, 'validation_error', ['calling_window.end']],
    ['a bad holiday', { ...base, calling_window: { holidays: ['2026-13-01'] } }, 'validation_error', ['calling_window.holidays']],
    ['concurrency 0', { ...base, concurrency: 0 }, 'validation_error', ['concurrency']],
    ['concurrency 1001', { ...base, concurrency: 1001 }, 'validation_error', ['concurrency']],
    ['fractional concurrency', { ...base, concurrency: 1.5 }, 'validation_error', ['concurrency']],
    ['11 retries', { ...base, retry: { busy: { retries: 11, wait_seconds: 60 } } }, 'validation_error', ['retry.busy.retries']],
    ['a wait under a minute', { ...base, retry: { no_answer: { retries: 1, wait_seconds: 59 } } }, 'validation_error', ['retry.no_answer.wait_seconds']],
    ['a wait over a week', { ...base, retry: { voicemail: { retries: 1, wait_seconds: 604801 } } }, 'validation_error', ['retry.voicemail.wait_seconds']],
    ['a rule without its wait', { ...base, retry: { carrier_error: { retries: 1 } } }, 'validation_error', ['retry.carrier_error.wait_seconds']],
    ['a bad variable type', { ...base, recipient_variables: [{ name: 'x', type: 'date' }] }, 'validation_error', ['recipient_variables[0].type']],
    ['a bad variable name', { ...base, recipient_variables: [{ name: 'first name' }] }, 'validation_error', ['recipient_variables[0].name']],
    ['an object as success value', { ...base, success: { extracted_field: { name: 'x', equals: {} } } }, 'validation_error', ['success.extracted_field.equals']],
    ['a caller id that is not E.164', { ...base, from: '5551234' }, 'validation_error', ['from']],
    ['an unknown time zone', { ...base, timezone: 'Mars/Olympus' }, 'validation_error', ['timezone']],
    ['metadata that is not strings', { ...base, metadata: { n: 1 } }, 'validation_error', ['metadata']],
  ])('refuses %s', async (_what, body, code, fields) => {
    expect(await validated(WorkflowInputDto, body)).toEqual({ code, fields });
  });

  it('takes a partial PATCH where null clears optional fields, but not name or agent_id', async () => {
    expect(await validated(WorkflowPatchDto, { concurrency: 3 })).toEqual({ value: expect.any(WorkflowPatchDto) });
    const cleared = await validated(WorkflowPatchDto, { description: null, retry: null, calling_window: null, metadata: null, from: null });
    expect(JSON.stringify(cleared.value)).toBe('{"description":null,"retry":null,"calling_window":null,"metadata":null,"from":null}');
    expect(await validated(WorkflowPatchDto, { name: null, agent_id: null })).toEqual({ code: 'validation_error', fields: ['name', 'agent_id'] });
    expect(await validated(WorkflowPatchDto, { concurrency: 0 })).toEqual({ code: 'validation_error', fields: ['concurrency'] });
    expect(await validated(WorkflowPatchDto, { owner: 'x' })).toEqual({ code: 'invalid_request', fields: ['owner'] });
  });

  it('checks a run’s body: at most 1000 recipients, their shape, start_at as RFC 3339, unknown fields', async () => {
    expect(await validated(StartRunDto, { recipients: recipients(1000), start_at: '2026-02-01T09:00:00+01:00', recipients_complete: false })).toEqual({
      value: expect.any(StartRunDto),
    });
    expect(await validated(StartRunDto, { recipients: recipients(1001) })).toEqual({ code: 'validation_error', fields: ['recipients'] });
    expect(await validated(StartRunDto, { recipients: [{ to: '' }] })).toEqual({ code: 'validation_error', fields: ['recipients[0].to'] });
    expect(await validated(StartRunDto, { recipients: [{ to: '+1', variables: { n: 1 } }] })).toEqual({ code: 'validation_error', fields: ['recipients[0].variables'] });
    expect(await validated(StartRunDto, { recipients: [{ to: '+1', name: 'Ada' }] })).toEqual({ code: 'invalid_request', fields: ['recipients[0].name'] });
    expect(await validated(StartRunDto, { recipients_csv: 'to\n+1', start_at: 'tomorrow' })).toEqual({ code: 'validation_error', fields: ['start_at'] });
    expect(await validated(StartRunDto, { recipients_csv: 'to\n+1', start_at: '2026-02-30T09:00:00Z' })).toEqual({ code: 'validation_error', fields: ['start_at'] });
    expect(await validated(StartRunDto, { recipients_csv: 'to\n+1', recipients_complete: 'yes' })).toEqual({ code: 'validation_error', fields: ['recipients_complete'] });
    expect(await validated(StartRunDto, { recipients_csv: 'to\n+1', to: '+1' })).toEqual({ code: 'invalid_request', fields: ['to'] });
    expect(await validated(AddRecipientsDto, { recipients: recipients(1001), complete: true })).toEqual({ code: 'validation_error', fields: ['recipients'] });
    expect(await validated(AddRecipientsDto, { recipients_complete: true })).toEqual({ code: 'invalid_request', fields: ['recipients_complete'] });
  });
});

describe('workflow routes: ids and permissions', () => {
  it('declares wf_ ids for :id (404 for anything else before any service is asked)', () => {
    const shape = resourceIdShape(new Reflector(), WorkflowsController);
    expect(shape).toEqual({ prefix: 'wf', name: 'workflow' });
    expect(inspectResourceId({ id: WF }, shape)).toBeUndefined();
    expect(inspectResourceId({ id: 'wf_1' }, shape)?.code).toBe('not_found');
    expect(inspectResourceId({ id: RUN }, shape)?.code).toBe('not_found');
  });

  it('requires agents:read/write on workflows and calls:read/write on runs', () => {
    const permission = (method: keyof WorkflowsController) => Reflect.getMetadata(PERMISSION_KEY, WorkflowsController.prototype[method]);
    expect({
      list: permission('list'),
      create: permission('create'),
      get: permission('get'),
      update: permission('update'),
      remove: permission('remove'),
      listRuns: permission('listRuns'),
      startRun: permission('startRun'),
      getRun: permission('getRun'),
      addRecipients: permission('addRecipients'),
      listRecipients: permission('listRecipients'),
      pause: permission('pause'),
      resume: permission('resume'),
      cancel: permission('cancel'),
      events: permission('events'),
    }).toEqual({
      list: 'agents:read',
      create: 'agents:write',
      get: 'agents:read',
      update: 'agents:write',
      remove: 'agents:write',
      listRuns: 'calls:read',
      startRun: 'calls:write',
      getRun: 'calls:read',
      addRecipients: 'calls:write',
      listRecipients: 'calls:read',
      pause: 'calls:write',
      resume: 'calls:write',
      cancel: 'calls:write',
      events: 'calls:read',
    });
  });
});

describe('workflow routes over HTTP (the real guards, body pipe, problem filter)', () => {
  const API_KEY = 'vsk_test_0123456789abcdef';
  let app: NestFastifyApplication;
  let requests: Partial<Record<keyof Service, unknown>>;

  const config = { BODY_LIMIT_BYTES: 1024 * 1024, KNOWLEDGE_MAX_DOCUMENT_BYTES: 1024, CORS_ALLOWED_ORIGINS: '' } as GatewayConfig;

  beforeAll(async () => {
    const fake = fakeRpcClient<Service, WorkflowsClient>({
      createWorkflow: { workflow: workflow() },
      getWorkflow: { workflow: workflow() },
      startRun: { run: run(), page: { added: 1, suppressed: 0 } },
      addRecipients: { run: run(), page: { added: 1, suppressed: 0 } },
      pauseRun: { run: run({ status: 'paused' }) },
      listRecipients: { recipients: [recipient()], has_more: false, next: '' },
    });
    requests = fake.requests;
    const keys = { authenticate: async (key: string) => (key === API_KEY ? who : undefined) };
    const module = await Test.createTestingModule({
      controllers: [WorkflowsController],
      providers: [
        { provide: WorkflowsClient, useValue: fake.client },
        { provide: ApiKeysRepository, useValue: keys },
        // AuthGuard's, for console tokens; these requests carry API keys.
        { provide: CallsClient, useValue: {} },
        { provide: CursorCodec, useValue: cursors },
        // The idempotent routes' interceptor; these requests send no Idempotency-Key, so it is never consulted.
        { provide: IdempotencyStore, useValue: {} },
        { provide: BUS, useValue: new InProcessBus() },
        { provide: RateLimiter, useValue: new RateLimiter(1_000_000, 60, new MemoryRateLimitStore()) },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: InputHygieneGuard },
        { provide: APP_GUARD, useClass: QueryGuard },
        { provide: APP_GUARD, useClass: NoBodyGuard },
        { provide: APP_PIPE, useClass: BodyValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(gatewayAdapterOptions(config)));
    // The deployment's HTTP setup (body limits per route, JSON only, common headers), as the gateway configures it.
    configureGatewayHttp(app, config);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app?.close());

  const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, bearer = API_KEY) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });

  it('creates (201) and starts a run (201); adds recipients and pauses (200)', async () => {
    const created = await send('POST', '/v1/workflows', { name: 'Reminders', agent_id: AGENT });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ id: WF, object: 'workflow' });
    const started = await send('POST', `/v1/workflows/${WF}/runs`, { recipients: [{ to: '+15551234567' }] });
    expect(started.statusCode).toBe(201);
    expect(started.json()).toMatchObject({ object: 'workflow_run', page: { added: 1 } });
    const added = await send('POST', `/v1/workflows/${WF}/runs/${RUN}/recipients`, { recipients_csv: 'to\n+15551234567\n', complete: true });
    expect(added.statusCode).toBe(200);
    const paused = await send('POST', `/v1/workflows/${WF}/runs/${RUN}/pause`);
    expect(paused.statusCode).toBe(200);
    expect(paused.json()).toMatchObject({ status: 'paused' });
  });

  it('answers 401 without a key, 404 for malformed ids, 400 for unknown fields, bodies on pause, unknown query parameters', async () => {
    expect((await send('GET', `/v1/workflows/${WF}`, undefined, 'vsk_wrong')).statusCode).toBe(401);
    delete requests.getWorkflow;
    const notFound = await send('GET', '/v1/workflows/wf_nope');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toMatchObject({ code: 'not_found' });
    expect((await send('GET', `/v1/workflows/${RUN}/runs`)).statusCode).toBe(404);
    expect((await send('GET', `/v1/workflows/${WF}/runs/wfr_nope`)).statusCode).toBe(404);
    expect((await send('POST', `/v1/workflows/${WF}/runs/nope/cancel`)).statusCode).toBe(404);
    expect(requests.getWorkflow).toBeUndefined();
    const unknown = await send('POST', '/v1/workflows', { name: 'x', agent_id: AGENT, owner: 'me' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ code: 'invalid_request', errors: [{ field: 'owner' }] });
    const withBody = await send('POST', `/v1/workflows/${WF}/runs/${RUN}/pause`, { now: true });
    expect(withBody.statusCode).toBe(400);
    expect((await send('GET', `/v1/workflows/${WF}/runs/${RUN}/recipients?status=failed`)).statusCode).toBe(400);
    expect((await send('GET', `/v1/workflows/${WF}/runs/${RUN}/recipients?state=failed`)).statusCode).toBe(200);
  });

  it('takes pages of recipients up to 2 MB on the two routes that add them, other routes the deployment’s limit', async () => {
    // 1.5 MB of CSV: over BODY_LIMIT_BYTES (1 MB), under the recipients' 2 MB.
    const csv = `to,note\n${Array.from({ length: 1000 }, (_, i) => `+1555${i},${'x'.repeat(1500)}`).join('\n')}\n`;
    expect((await send('POST', `/v1/workflows/${WF}/runs`, { recipients_csv: csv })).statusCode).toBe(201);
    expect((await send('POST', `/v1/workflows/${WF}/runs/${RUN}/recipients`, { recipients_csv: csv })).statusCode).toBe(200);
    const tooBig = await send('POST', `/v1/workflows/${WF}/runs`, { recipients_csv: csv + csv });
    expect(tooBig.statusCode).toBe(413);
    expect(tooBig.json()).toMatchObject({ code: 'payload_too_large' });
    expect((await send('POST', '/v1/workflows', { name: 'x', agent_id: AGENT, description: csv })).statusCode).toBe(413);
  });

  it('answers 422 for both recipient forms and for more than 1000 recipients, naming the field', async () => {
    const both = await send('POST', `/v1/workflows/${WF}/runs`, { recipients: [{ to: '+1' }], recipients_csv: 'to\n+1' });
    expect(both.statusCode).toBe(422);
    expect(both.json()).toMatchObject({ code: 'validation_error', errors: [{ field: 'recipients_csv' }] });
    const many = await send('POST', `/v1/workflows/${WF}/runs`, { recipients: recipients(1001) });
    expect(many.statusCode).toBe(422);
    expect(many.json()).toMatchObject({ errors: [{ field: 'recipients' }] });
    const badEnum = await send('POST', '/v1/workflows', { name: 'x', agent_id: AGENT, calling_window: { days: ['funday'] } });
    expect(badEnum.statusCode).toBe(422);
    expect(badEnum.json()).toMatchObject({ errors: [{ field: 'calling_window.days' }] });
  });
});

describe('workflow routes in the OpenAPI document', () => {
  let document: OpenAPIObject;

  beforeAll(async () => {
    document = await gatewayOpenApiDocument();
  });

  type Op = {
    tags: string[];
    description: string;
    'x-permission': string;
    parameters?: { name: string; in: string }[];
    responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
  };
  const WORKFLOW = '/v1/workflows/{id}';
  const RUNS = `${WORKFLOW}/runs`;
  const A_RUN = `${RUNS}/{run_id}`;
  const ops: [string, string, string, string, boolean][] = [
    // method, path, permission, success status, honours Idempotency-Key
    ['get', '/v1/workflows', 'agents:read', '200', false],
    ['post', '/v1/workflows', 'agents:write', '201', true],
    ['get', WORKFLOW, 'agents:read', '200', false],
    ['patch', WORKFLOW, 'agents:write', '200', false],
    ['delete', WORKFLOW, 'agents:write', '200', false],
    ['get', RUNS, 'calls:read', '200', false],
    ['post', RUNS, 'calls:write', '201', true],
    ['get', A_RUN, 'calls:read', '200', false],
    ['post', `${A_RUN}/recipients`, 'calls:write', '200', true],
    ['get', `${A_RUN}/recipients`, 'calls:read', '200', false],
    ['post', `${A_RUN}/pause`, 'calls:write', '200', true],
    ['post', `${A_RUN}/resume`, 'calls:write', '200', true],
    ['post', `${A_RUN}/cancel`, 'calls:write', '200', true],
    ['get', `${A_RUN}/events`, 'calls:read', '200', false],
  ];

  it.each(ops)('publishes %s %s under Workflows with %s, its response schema, no 501', (method, path, permission, status, idempotent) => {
    const op = (document.paths[path] as Record<string, Op>)?.[method];
    expect(op).toBeDefined();
    expect(op.tags).toEqual(['Workflows']);
    expect(op['x-permission']).toBe(permission);
    expect(op.description).toBeTruthy();
    expect(op.responses['501']).toBeUndefined();
    if (path.endsWith('/events')) expect(Object.keys(op.responses[status].content ?? {})).toEqual(['text/event-stream']);
    else expect(op.responses[status].content?.['application/json'].schema.$ref).toMatch(/^#\/components\/schemas\//);
    expect((op.parameters ?? []).some((p) => p.name === 'Idempotency-Key')).toBe(idempotent);
  });

  it('leaves no workflow route planned and describes pause, cancel and the 409s', () => {
    const workflowPaths = Object.keys(document.paths).filter((p) => p.startsWith('/v1/workflows'));
    expect(workflowPaths.sort()).toEqual([...new Set(ops.map(([, path]) => path))].sort());
    const op = (path: string, method: string) => (document.paths[path] as Record<string, Op>)[method];
    expect(op(`${A_RUN}/pause`, 'post').description).toContain('calls already live go on');
    expect(op(`${A_RUN}/cancel`, 'post').description).toContain('becomes `cancelled`');
    for (const [path, method] of [[WORKFLOW, 'delete'], [`${A_RUN}/pause`, 'post'], [`${A_RUN}/resume`, 'post'], [`${A_RUN}/cancel`, 'post']]) {
      expect(op(path, method).responses['409']).toBeDefined();
    }
    expect(op(`${A_RUN}/recipients`, 'get').parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['id', 'run_id', 'state', 'limit', 'starting_after']));
  });

  it('publishes the resources with prefixed example ids and the page outcome', () => {
    const schemas = document.components?.schemas as Record<string, { properties: Record<string, { example?: unknown }>; required?: string[] }>;
    expect(schemas['WorkflowDto'].properties['id'].example).toMatch(/^wf_/);
    expect(schemas['RunDto'].properties['id'].example).toMatch(/^wfr_/);
    expect(schemas['RecipientDto'].properties['id'].example).toMatch(/^wfrc_/);
    expect(schemas['RunPageDto'].properties['page']).toBeDefined();
    expect(Object.keys(schemas['RunCountsDto'].properties)).toEqual(['total', 'pending', 'in_progress', 'retrying', 'succeeded', 'failed', 'suppressed', 'cancelled']);
    expect(schemas['WorkflowInputDto'].required).toEqual(expect.arrayContaining(['name', 'agent_id']));
  });
});

/** A request and a hijackable reply whose raw stream is recorded as the SSE events it wrote. */
function sse() {
  const written: string[] = [];
  const reply = {
    ended: false,
    hijacked: false,
    hijack() {
      this.hijacked = true;
    },
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
  return { request, reply, events, close: () => request.raw.emit('close') };
}

const flush = () => new Promise((r) => setImmediate(r));

const runEvent = (id: string, type: 'workflow_run.started' | 'workflow_run.completed', status?: 'completed' | 'cancelled'): WebhookEvent =>
  ({
    id,
    type,
    call_id: null,
    created_at: T0,
    data: { workflow_id: WF, run_id: RUN, counts, ...(status ? { status } : {}) },
    account_id: 'acme',
    agent_id: AGENT,
    workflow: null,
  }) as WebhookEvent;

describe('GET /v1/workflows/{id}/runs/{run_id}/events', () => {
  let bus: InProcessBus;
  const broadcast = (activity: WorkflowRunActivity, runId = RUN) => bus.broadcast(LIVE.workflowRun(runId).name, activity);

  beforeEach(() => {
    bus = new InProcessBus();
    bus.open();
  });

  function stream(answers: Partial<Record<keyof Service, unknown>>, over: { bus?: Bus } = {}) {
    const { client, requests } = fakeRpcClient<Service, WorkflowsClient>(answers);
    const s = sse();
    const c = new WorkflowsController(client, cursors, over.bus ?? bus);
    return { s, requests, opened: c.events(who, WF, RUN, s.request as never, s.reply as never) };
  }

  it('opens with the run, then its events and changes (the public envelope; stale and repeated runs skipped), and ends once completed', async () => {
    const { s, requests, opened } = stream({ getRun: { run: run({ updated_at: '2026-01-01T00:00:01.000Z' }) } });
    await opened;
    expect(requests.getRun).toEqual({ account_id: 'acme', workflow_id: WF, run_id: RUN });
    await broadcast({ kind: 'event', event: runEvent('evt_1', 'workflow_run.started') });
    await broadcast({ kind: 'run', run: run({ updated_at: '2026-01-01T00:00:00.500Z', status: 'scheduled' }) });
    await broadcast({ kind: 'run', run: run({ updated_at: '2026-01-01T00:00:01.000Z' }) });
    await broadcast({ kind: 'run', run: run({ updated_at: '2026-01-01T00:00:02.000Z', counts: { ...counts, succeeded: 2, in_progress: 0 } }) });
    await broadcast({ kind: 'event', event: runEvent('evt_other', 'workflow_run.started') }, 'wfr_other0123456789abcdef');
    await broadcast({ kind: 'event', event: runEvent('evt_2', 'workflow_run.completed', 'completed') });
    await broadcast({ kind: 'run', run: run({ updated_at: '2026-01-01T00:00:03.000Z', status: 'completed', completed_at: '2026-01-01T00:00:03.000Z' }) });
    await broadcast({ kind: 'event', event: runEvent('evt_late', 'workflow_run.started') });
    await flush();

    expect(s.events().map((e) => [e.event, e.id])).toEqual([
      ['workflow_run.updated', `${RUN}:2026-01-01T00:00:01.000Z`],
      ['workflow_run.started', 'evt_1'],
      ['workflow_run.updated', `${RUN}:2026-01-01T00:00:02.000Z`],
      ['workflow_run.completed', 'evt_2'],
      ['workflow_run.updated', `${RUN}:2026-01-01T00:00:03.000Z`],
    ]);
    const [first, started, , , completed] = s.events();
    expect(first.data).toEqual({ ...PRESENTED_RUN, updated_at: '2026-01-01T00:00:01.000Z' });
    expect(started.data).toEqual({ id: 'evt_1', type: 'workflow_run.started', call_id: null, created_at: T0, data: { workflow_id: WF, run_id: RUN, counts } });
    expect(completed.data).toMatchObject({ object: 'workflow_run', status: 'completed', completed_at: '2026-01-01T00:00:03.000Z' });
    expect(s.reply.ended).toBe(true);
  });

  it('sends a run that is already over and ends at once, no longer listening', async () => {
    const unlisten = jest.fn();
    const listen = bus.listen.bind(bus);
    jest.spyOn(bus, 'listen').mockImplementation(async (subject, handler) => {
      const stop = await listen(subject, handler);
      return () => (unlisten(), stop());
    });
    const { s, opened } = stream({ getRun: { run: run({ status: 'cancelled', completed_at: T0 }) } });
    await opened;
    expect(s.events().map((e) => [e.event, e.data['status']])).toEqual([['workflow_run.updated', 'cancelled']]);
    expect(s.reply.ended).toBe(true);
    expect(unlisten).toHaveBeenCalledTimes(1);
    await broadcast({ kind: 'event', event: runEvent('evt_1', 'workflow_run.started') });
    await flush();
    expect(s.events()).toHaveLength(1);
  });

  it('sends what it heard while reading the run before it, and stops listening when the client goes', async () => {
    let release: () => void = () => undefined;
    const read = new Promise<void>((r) => (release = r));
    const client = {
      call: async () => {
        await read;
        return { run: run() };
      },
    } as unknown as WorkflowsClient;
    const s = sse();
    const opened = new WorkflowsController(client, cursors, bus).events(who, WF, RUN, s.request as never, s.reply as never);
    await flush();
    await broadcast({ kind: 'event', event: runEvent('evt_early', 'workflow_run.started') });
    await broadcast({ kind: 'run', run: run({ status: 'scheduled', updated_at: '2025-12-31T23:59:59.000Z' }) });
    release();
    await opened;
    expect(s.events().map((e) => e.event)).toEqual(['workflow_run.started', 'workflow_run.updated']);
    expect(s.events()[1].data).toMatchObject({ status: 'running' });
    s.close();
    expect(s.reply.ended).toBe(true);
    await broadcast({ kind: 'run', run: run({ updated_at: '2026-01-02T00:00:00.000Z' }) });
    await flush();
    expect(s.events()).toHaveLength(2);
  });

  it('answers 404 for a malformed run id, and a run the service does not know as any route would, without opening a stream', async () => {
    const { client, requests } = fakeRpcClient<Service, WorkflowsClient>({});
    const s = sse();
    const c = new WorkflowsController(client, cursors, bus);
    expect(await refusal(c.events(who, WF, 'wfr_nope', s.request as never, s.reply as never))).toMatchObject({ code: 'not_found' });
    expect(requests.getRun).toBeUndefined();
    const missing = { call: () => Promise.reject(AppError.notFound('workflow run')) } as unknown as WorkflowsClient;
    const unlisten = jest.fn();
    const counting = { listen: async () => unlisten } as unknown as Bus;
    expect(await refusal(new WorkflowsController(missing, cursors, counting).events(who, WF, RUN, s.request as never, s.reply as never))).toMatchObject({
      code: 'not_found',
    });
    expect(unlisten).toHaveBeenCalledTimes(1);
    expect(s.reply.hijacked).toBe(false);
  });
});
