import 'reflect-metadata';
import { Metadata } from '@grpc/grpc-js';
import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { firstValueFrom, Observable, of, throwError } from 'rxjs';
import { agentsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { IdempotencyStore } from '../edge/idempotency.store';
import { CursorCodec } from '../http/pagination';
import { ProblemFilter } from '../http/problem';
import { BodyValidationPipe } from '../http/validation';
import { AgentGroupsController } from './agent-groups.controller';
import { AgentsClient } from './agents.client';
import { AgentsController } from './agents.controller';
import { ProjectsService } from '../projects/projects.service';

const DEFAULT_PROJECT = `prj_${'0'.repeat(22)}`;

type Service = agentsV1.AgentsServiceClient;

/** Stands in for AuthGuard: every request comes from account `acme`. */
class AcmeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    context.switchToHttp().getRequest().principal = { accountId: 'acme' } as Principal;
    return true;
  }
}

describe('agent and group bodies: the shape’s and the service’s problems in one 422', () => {
  let app: NestFastifyApplication;
  const requests: Partial<Record<keyof Service, { account_id: string; id: string; spec_json: string }>> = {};
  let answer: () => Observable<unknown>;

  beforeAll(async () => {
    const service = new Proxy({} as Service, {
      get: (_t, method: keyof Service) => (request: never) => {
        requests[method] = request;
        return answer();
      },
    });
    const client = { call: <R>(_m: string, invoke: (s: Service, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service, new Metadata())) };
    const module = await Test.createTestingModule({
      controllers: [AgentsController, AgentGroupsController],
      providers: [
        { provide: AgentsClient, useValue: client },
        { provide: CursorCodec, useValue: new CursorCodec('unit-test-secret-key-0000000000000001') },
        { provide: IdempotencyStore, useValue: {} },
        // Every agent goes into the default project, without a ceiling.
        { provide: ProjectsService, useValue: { within: (_a: string, _id: string, _f: string, work: (p: object) => unknown) => work({ id: DEFAULT_PROJECT, max_agents: null }) } },
        { provide: APP_GUARD, useClass: AcmeGuard },
        { provide: APP_PIPE, useClass: BodyValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await (app as INestApplication).init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app?.close());

  beforeEach(() => {
    for (const key of Object.keys(requests)) delete requests[key as keyof Service];
  });

  const send = (method: 'POST' | 'PATCH', url: string, payload: object) => app.inject({ method, url, payload });
  const fields = (res: { json: () => { errors: { field: string }[] } }) => res.json().errors.map((e) => e.field);

  it('adds the service’s problems on the fields the shape check passed, on create and patch of an agent', async () => {
    answer = () => of({ problems: [{ field: 'languages[0].stt_provider', message: 'is not a configured recognizer' }, { field: 'name', message: 'is required' }] });
    const body = { name: 42, languages: [{ code: 'en-US', stt_provider: 'nope' }] };
    for (const [method, url, id] of [['POST', '/v1/agents', ''], ['PATCH', '/v1/agents/agt_1', 'agt_1']] as const) {
      const res = await send(method, url, body);

      expect(res.statusCode).toBe(422);
      expect(fields(res)).toEqual(['name', 'languages[0].stt_provider']);
      // The service checks only what the shape check found no fault with; its `name` problem is not repeated.
      expect(requests.checkAgentWrite).toEqual({ account_id: 'acme', id, spec_json: JSON.stringify({ languages: body.languages }) });
      expect(requests.createAgent ?? requests.updateAgent).toBeUndefined();
    }
  });

  it('asks the group rules for an agent group', async () => {
    answer = () => of({ problems: [{ field: 'defaults.webhook_url', message: 'is refused: 10.0.0.1 is a private address' }] });

    const res = await send('PATCH', '/v1/agent_groups/agrp_1', { name: 7, defaults: { webhook_url: 'https://10.0.0.1/' } });

    expect(res.statusCode).toBe(422);
    expect(fields(res)).toEqual(['name', 'defaults.webhook_url']);
    expect(requests.checkAgentGroupWrite).toMatchObject({ id: 'agrp_1' });
  });

  it('answers the shape’s problems alone when the service cannot check the rules', async () => {
    answer = () => throwError(() => new AppError('service_unavailable', 'down'));

    const res = await send('POST', '/v1/agents', { name: 42, languages: [{ code: 'en-US' }] });

    expect(res.statusCode).toBe(422);
    expect(fields(res)).toEqual(['name']);
  });
});
