import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiParam, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';
import { FieldProblem, RECIPIENT_STATES, workflowsV1 } from '@parley/contracts';
import { Bus } from '@parley/messaging';
import { isWellFormedId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { BUS } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { NoBody } from '../http/no-body';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { ResourceId } from '../http/resource-id';
import { streamRunEvents } from './run-event-stream';
import { presentRecipient, presentRun, presentRunPage, presentWorkflow } from './workflow-presenter';
import {
  AddRecipientsDto,
  DeletedWorkflowDto,
  RecipientDto,
  RecipientInputDto,
  RecipientListDto,
  RECIPIENTS_PER_PAGE,
  RunDto,
  RunListDto,
  RunPageDto,
  StartRunDto,
  WorkflowDto,
  WorkflowInputDto,
  WorkflowListDto,
  WorkflowPatchDto,
} from './workflow.dto';
import { WorkflowsClient } from './workflows.client';

/** The routes whose bodies carry a page of recipients (their own body limit, see http/setup). */
export const RUNS_ROUTE = '/v1/workflows/:id/runs';
export const RECIPIENTS_ROUTE = '/v1/workflows/:id/runs/:run_id/recipients';
/** The body limit of those routes: a page of 1000 recipients with their variables. */
export const RECIPIENTS_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const RUN_PARAM = ApiParam({ name: 'run_id', required: true, schema: { type: 'string' }, description: 'The run (wfr_…).' });

const PAGE_DESCRIPTION =
  'Give the recipients inline (`recipients`) or as CSV text (`recipients_csv`), not both; at most ' +
  `${RECIPIENTS_PER_PAGE} per request (more: page them in through \`POST /v1/workflows/{id}/runs/{run_id}/recipients\`). ` +
  'Duplicates (within the run), invalid numbers, numbers on the do-not-call list, recipients missing a required ' +
  'variable and unknown time zones are not refused: they are taken as `suppressed`, with the reason, and counted in ' +
  '`page.suppressed`. Bodies up to 2 MB.';

/**
 * Records in CSV text (RFC 4180: a quoted field may hold line breaks), blank lines not counted; stops counting past
 * `max`.
 */
export function csvRecordCount(text: string, max = Infinity): number {
  let records = 0;
  let quoted = false;
  let blank = true;
  for (let i = 0; i < text.length && records <= max; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      quoted = !quoted;
      blank = false;
    } else if (c === 0x0a && !quoted) {
      if (!blank) records++;
      blank = true;
    } else if (c !== 0x0d) {
      blank = false;
    }
  }
  return blank ? records : records + 1;
}

/**
 * A request's page of recipients as the service takes it, or undefined when it gives none (allowed only when
 * `optional`); refusing both forms together and more than RECIPIENTS_PER_PAGE recipients.
 */
function recipientsPage(
  body: { recipients?: RecipientInputDto[]; recipients_csv?: string },
  optional: boolean,
  whenNone: string,
): workflowsV1.RecipientsPage | undefined {
  const problems: FieldProblem[] = [];
  if (body.recipients !== undefined && body.recipients_csv !== undefined) {
    problems.push({ field: 'recipients_csv', message: 'cannot be given with recipients; give one of them' });
  } else if (body.recipients === undefined && body.recipients_csv === undefined && !optional) {
    problems.push({ field: 'recipients', message: `is required (or recipients_csv) ${whenNone}` });
  }
  if (body.recipients_csv !== undefined && csvRecordCount(body.recipients_csv, RECIPIENTS_PER_PAGE + 1) - 1 > RECIPIENTS_PER_PAGE) {
    problems.push({ field: 'recipients_csv', message: `must hold at most ${RECIPIENTS_PER_PAGE} rows after its header` });
  }
  if (problems.length) throw AppError.validation(problems);
  if (body.recipients !== undefined) return { recipients_json: JSON.stringify(body.recipients), recipients_csv: '' };
  if (body.recipients_csv !== undefined) return { recipients_json: '', recipients_csv: body.recipients_csv };
  return undefined;
}

function runId(id: string): string {
  if (!isWellFormedId('wfr', id)) throw AppError.notFound('workflow run');
  return id;
}

@ApiTags('Workflows')
@ResourceId('wf', 'workflow')
@Controller('v1/workflows')
export class WorkflowsController {
  constructor(
    private readonly workflows: WorkflowsClient,
    private readonly cursors: CursorCodec,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  // -------------------------------------------------------------------------------------------------------------
  // Workflows
  // -------------------------------------------------------------------------------------------------------------

  @Get()
  @Operation({ summary: 'List workflows, newest first', permission: 'agents:read', list: true })
  @ApiOkResponse({ type: WorkflowListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<WorkflowDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('workflows', who.accountId, c));
    const page = await this.workflows.call('listWorkflows', (s, md) => s.listWorkflows({ account_id: who.accountId, limit, after }, md));
    const data = (page.workflows ?? []).map(presentWorkflow);
    return this.envelope('workflows', who, data, page);
  }

  @Post()
  @Operation({
    summary: 'Create a workflow',
    description:
      'A reusable outbound campaign: the agent that calls, the calling window in each recipient\'s time zone, how many ' +
      'calls of a run are live at once, retries by outcome, what counts as success. The answer carries every field ' +
      'with its default filled in. The agent must exist on the account (422 `validation_error` naming `agent_id`).',
    permission: 'agents:write',
    idempotent: true,
    problems: ['validation_error', 'unsupported_media_type', 'payload_too_large'],
  })
  @ApiCreatedResponse({ type: WorkflowDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: WorkflowInputDto): Promise<WorkflowDto> {
    const res = await this.workflows.call('createWorkflow', (s, md) =>
      s.createWorkflow({ account_id: who.accountId, spec_json: JSON.stringify(body) }, md),
    );
    return presentWorkflow(res.workflow);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a workflow', permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: WorkflowDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<WorkflowDto> {
    const res = await this.workflows.call('getWorkflow', (s, md) => s.getWorkflow({ account_id: who.accountId, id }, md));
    return presentWorkflow(res.workflow);
  }

  @Patch(':id')
  @Operation({
    summary: 'Update a workflow',
    description:
      'Scalar fields merge; blocks (`calling_window`, `retry`, `success`) and lists (`recipient_variables`) are ' +
      'replaced whole; `null` clears an optional field (back to its default); `name` and `agent_id` cannot be cleared. ' +
      'Runs already started keep the definition they started with.',
    permission: 'agents:write',
    problems: ['not_found', 'validation_error', 'unsupported_media_type', 'payload_too_large'],
  })
  @ApiOkResponse({ type: WorkflowDto })
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: WorkflowPatchDto): Promise<WorkflowDto> {
    const res = await this.workflows.call('updateWorkflow', (s, md) =>
      s.updateWorkflow({ account_id: who.accountId, id, patch_json: JSON.stringify(body) }, md),
    );
    return presentWorkflow(res.workflow);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete a workflow',
    description: 'Refused with 409 `conflict` while one of its runs is scheduled, running or paused (cancel it first).',
    permission: 'agents:write',
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: DeletedWorkflowDto })
  @NoBody()
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedWorkflowDto> {
    const res = await this.workflows.call('deleteWorkflow', (s, md) => s.deleteWorkflow({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'workflow', deleted: true };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Runs
  // -------------------------------------------------------------------------------------------------------------

  @Get(':id/runs')
  @Operation({ summary: "List a workflow's runs, newest first, with their counts", permission: 'calls:read', list: true, problems: ['not_found'] })
  @ApiOkResponse({ type: RunListDto })
  async listRuns(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>): Promise<ListEnvelope<RunDto>> {
    const list = `workflow_runs:${id}`;
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode(list, who.accountId, c));
    const page = await this.workflows.call('listRuns', (s, md) => s.listRuns({ account_id: who.accountId, workflow_id: id, limit, after }, md));
    return this.envelope(list, who, (page.runs ?? []).map(presentRun), page);
  }

  @Post(':id/runs')
  @Operation({
    summary: 'Run a workflow',
    description:
      'Starts a run of the workflow with its recipients, `scheduled` until `start_at` (absent: now), then `running`. ' +
      `${PAGE_DESCRIPTION} With \`recipients_complete\` false more pages follow, and this request may carry none. ` +
      "Each recipient's calls are ordinary calls (`POST /v1/calls` semantics: variables, webhooks, the event stream), " +
      'linked to the run.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'unsupported_media_type', 'payload_too_large'],
  })
  @ApiCreatedResponse({ type: RunPageDto })
  async startRun(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: StartRunDto): Promise<RunPageDto> {
    const complete = body.recipients_complete ?? true;
    const recipients = recipientsPage(body, !complete, 'unless recipients_complete is false');
    const res = await this.workflows.call('startRun', (s, md) =>
      s.startRun(
        { account_id: who.accountId, workflow_id: id, recipients, start_at: body.start_at ?? '', recipients_complete: complete, metadata: body.metadata ?? {} },
        md,
      ),
    );
    return presentRunPage(res);
  }

  @Get(':id/runs/:run_id')
  @Operation({ summary: 'Retrieve a run with its counts', permission: 'calls:read', problems: ['not_found'] })
  @RUN_PARAM
  @ApiOkResponse({ type: RunDto })
  async getRun(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Param('run_id') run: string): Promise<RunDto> {
    const res = await this.workflows.call('getRun', (s, md) => s.getRun({ account_id: who.accountId, workflow_id: id, run_id: runId(run) }, md));
    return presentRun(res.run);
  }

  @Post(':id/runs/:run_id/recipients')
  @HttpCode(200)
  @Operation({
    summary: 'Add a page of recipients to a run',
    description:
      `${PAGE_DESCRIPTION} \`complete\` says this is the last page (default false); a request that only says so may ` +
      'carry no recipients. 409 `conflict` once the run was told its last page, or is completed or cancelled.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict', 'validation_error', 'unsupported_media_type', 'payload_too_large'],
  })
  @RUN_PARAM
  @ApiOkResponse({ type: RunPageDto })
  async addRecipients(
    @CurrentPrincipal() who: Principal,
    @Param('id') id: string,
    @Param('run_id') run: string,
    @Body() body: AddRecipientsDto,
  ): Promise<RunPageDto> {
    const run_id = runId(run);
    const complete = body.complete ?? false;
    const recipients = recipientsPage(body, complete, 'unless complete is true');
    const res = await this.workflows.call('addRecipients', (s, md) =>
      s.addRecipients({ account_id: who.accountId, workflow_id: id, run_id, recipients, complete }, md),
    );
    return presentRunPage(res);
  }

  @Get(':id/runs/:run_id/recipients')
  @Operation({
    summary: "List a run's recipients, newest first",
    description: 'Each with its state, attempts, last outcome, the reason it was suppressed or failed, and its calls.',
    permission: 'calls:read',
    list: true,
    query: ['state'],
    problems: ['not_found'],
  })
  @RUN_PARAM
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string', enum: [...RECIPIENT_STATES] }, description: 'Only recipients in this state.' })
  @ApiOkResponse({ type: RecipientListDto })
  async listRecipients(
    @CurrentPrincipal() who: Principal,
    @Param('id') id: string,
    @Param('run_id') run: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ListEnvelope<RecipientDto>> {
    const run_id = runId(run);
    const list = `workflow_recipients:${run_id}`;
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode(list, who.accountId, c));
    const state = query['state'] === undefined ? '' : String(query['state']);
    if (state && !(RECIPIENT_STATES as readonly string[]).includes(state)) {
      throw new AppError('invalid_request', `state must be one of ${RECIPIENT_STATES.join(', ')}.`);
    }
    const page = await this.workflows.call('listRecipients', (s, md) =>
      s.listRecipients({ account_id: who.accountId, workflow_id: id, run_id, state, limit, after }, md),
    );
    return this.envelope(list, who, (page.recipients ?? []).map(presentRecipient), page);
  }

  @Post(':id/runs/:run_id/pause')
  @HttpCode(200)
  @Operation({
    summary: 'Pause a run',
    description:
      'No body. No new calls are placed; calls already live go on and their outcomes are recorded. Recipients that ' +
      'come due while the run is paused wait for the resume. 409 `conflict` unless the run is scheduled or running.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @RUN_PARAM
  @ApiOkResponse({ type: RunDto })
  @NoBody()
  async pause(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Param('run_id') run: string): Promise<RunDto> {
    const res = await this.workflows.call('pauseRun', (s, md) => s.pauseRun({ account_id: who.accountId, workflow_id: id, run_id: runId(run) }, md));
    return presentRun(res.run);
  }

  @Post(':id/runs/:run_id/resume')
  @HttpCode(200)
  @Operation({
    summary: 'Resume a paused run',
    description:
      'No body. Calling starts again where it stopped (recipients that came due while paused first), within the ' +
      'calling window and the concurrency. 409 `conflict` unless the run is paused.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @RUN_PARAM
  @ApiOkResponse({ type: RunDto })
  @NoBody()
  async resume(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Param('run_id') run: string): Promise<RunDto> {
    const res = await this.workflows.call('resumeRun', (s, md) => s.resumeRun({ account_id: who.accountId, workflow_id: id, run_id: runId(run) }, md));
    return presentRun(res.run);
  }

  @Post(':id/runs/:run_id/cancel')
  @HttpCode(200)
  @Operation({
    summary: 'Cancel a run',
    description:
      'No body. No new calls are placed; calls already live go on and their outcomes are recorded; every recipient ' +
      'not yet final becomes `cancelled`, and the run `cancelled`. 409 `conflict` once the run is completed or cancelled.',
    permission: 'calls:write',
    idempotent: true,
    problems: ['not_found', 'conflict'],
  })
  @RUN_PARAM
  @ApiOkResponse({ type: RunDto })
  @NoBody()
  async cancel(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Param('run_id') run: string): Promise<RunDto> {
    const res = await this.workflows.call('cancelRun', (s, md) => s.cancelRun({ account_id: who.accountId, workflow_id: id, run_id: runId(run) }, md));
    return presentRun(res.run);
  }

  @Get(':id/runs/:run_id/events')
  @Operation({
    summary: "Stream a run's events",
    description: [
      'Server-Sent Events (`text/event-stream`). Each message has `id`, `event` and JSON `data`:',
      '`workflow_run.updated` (data: the run, with its counts) first with the run as it is, then after every change;',
      'every event of the run as it is recorded (`workflow_run.started`, `workflow_run.recipient.finished`,',
      '`workflow_run.completed`; data: the webhook envelope).',
      'The stream ends after the run is `completed` or `cancelled` (at once for a run that already is).',
      'A comment line is sent every 15 s to keep proxies from closing an idle stream.',
    ].join(' '),
    permission: 'calls:read',
    problems: ['not_found'],
  })
  @RUN_PARAM
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } })
  async events(
    @CurrentPrincipal() who: Principal,
    @Param('id') id: string,
    @Param('run_id') run: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const run_id = runId(run);
    await streamRunEvents(
      this.bus,
      run_id,
      async () => (await this.workflows.call('getRun', (s, md) => s.getRun({ account_id: who.accountId, workflow_id: id, run_id }, md))).run,
      request,
      reply,
    );
  }

  /** A list page; the service's position of the next page becomes a cursor signed for this list and account. */
  private envelope<T>(list: string, who: Principal, data: T[], page: { has_more: boolean; next: string }): ListEnvelope<T> {
    return {
      object: 'list',
      data,
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode(list, who.accountId, page.next) } : {}),
    };
  }
}
