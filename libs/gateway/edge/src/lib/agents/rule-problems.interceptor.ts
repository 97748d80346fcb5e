import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { catchError, from, mergeMap, Observable, throwError } from 'rxjs';
import { FieldProblem } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { AgentsClient } from './agents.client';

/** The top-level body field a problem's path is under (`languages` for `languages[1].voice_id`). */
const topLevel = (field: string) => /^[^.[]*/.exec(field)?.[0] ?? field;

/**
 * Every invalid field of an agent or agent group body at once. The gateway checks the body's shape
 * (BodyValidationPipe) and the agents service its rules (the deployment's catalogue, URL targets, the group an agent
 * names), so when the shape check refuses a body, the service checks the top-level fields the shape check found no
 * fault with (CheckAgentWrite, CheckAgentGroupWrite) and their problems join the others in one 422. Should the
 * service not answer, the shape's problems are answered alone.
 */
@Injectable()
export class AgentRuleProblemsInterceptor implements NestInterceptor {
  constructor(private readonly agents: AgentsClient) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest<{ Params: { id?: string } }>>();
    return next.handle().pipe(catchError((error: unknown) => from(this.withRuleProblems(error, request)).pipe(mergeMap((e) => throwError(() => e)))));
  }

  private async withRuleProblems(error: unknown, request: FastifyRequest<{ Params: { id?: string } }>): Promise<unknown> {
    const body = request.body;
    if (!(error instanceof AppError) || error.code !== 'validation_error' || !request.principal) return error;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return error;
    const refused = new Set((error.errors ?? []).map((p) => topLevel(p.field)));
    const write = {
      account_id: request.principal.accountId,
      id: request.params.id ?? '',
      // project_id is the gateway's (the project the agent goes into), not part of the agent's document.
      spec_json: JSON.stringify(Object.fromEntries(Object.entries(body).filter(([field]) => !refused.has(field) && field !== 'project_id'))),
    };
    let problems: FieldProblem[];
    try {
      ({ problems } = request.url.startsWith('/v1/agent_groups')
        ? await this.agents.call('checkAgentGroupWrite', (s, md) => s.checkAgentGroupWrite(write, md))
        : await this.agents.call('checkAgentWrite', (s, md) => s.checkAgentWrite(write, md)));
    } catch {
      return error;
    }
    const more = problems.filter((p) => !refused.has(topLevel(p.field)));
    return more.length ? AppError.validation([...(error.errors ?? []), ...more]) : error;
  }
}
