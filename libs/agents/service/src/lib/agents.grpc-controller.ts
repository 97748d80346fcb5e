import { Controller } from '@nestjs/common';
import { agentsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { AgentEntity } from './agent.entity';
import { AgentFields, AgentsRepository } from './agents.repository';

const { AgentsServiceControllerMethods } = agentsV1;

function toMessage(a: AgentEntity): agentsV1.Agent {
  return {
    id: a.id,
    account_id: a.accountId,
    name: a.name,
    description: a.description,
    languages: a.languages.map((l) => ({ code: l.code })),
    metadata: a.metadata,
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
  };
}

function fieldsOf(input: agentsV1.AgentInput | undefined): Partial<AgentFields> {
  const fields: Partial<AgentFields> = {};
  if (input?.name !== undefined) fields.name = input.name;
  if (input?.description !== undefined) fields.description = input.description;
  if (input?.languages) fields.languages = input.languages.entries.map((l) => ({ code: l.code }));
  if (input?.metadata) fields.metadata = { ...input.metadata.entries };
  return fields;
}

/** Positions are `<created_at ISO>|<id>` as produced by the repository; anything else is refused. */
function parsePosition(after: string): { createdAt: Date; id: string } | undefined {
  if (!after) return undefined;
  const [iso, id] = after.split('|');
  const createdAt = new Date(iso);
  if (!id || Number.isNaN(createdAt.getTime())) {
    throw AppError.validation([{ field: 'starting_after', message: 'is not a valid cursor' }]);
  }
  return { createdAt, id };
}

@Controller()
@AgentsServiceControllerMethods()
export class AgentsGrpcController implements agentsV1.AgentsServiceController {
  constructor(private readonly agents: AgentsRepository) {}

  async createAgent(req: agentsV1.CreateAgentRequest): Promise<agentsV1.CreateAgentResponse> {
    const { name, languages, description = '', metadata = {} } = fieldsOf(req.agent);
    if (!name || !languages?.length) {
      throw AppError.validation([
        ...(name ? [] : [{ field: 'name', message: 'is required' }]),
        ...(languages?.length ? [] : [{ field: 'languages', message: 'needs at least one language' }]),
      ]);
    }
    const agent = await this.agents.create(req.account_id, { name, languages, description, metadata });
    return { agent: toMessage(agent) };
  }

  async getAgent(req: agentsV1.GetAgentRequest): Promise<agentsV1.GetAgentResponse> {
    const agent = await this.agents.find(req.account_id, req.id);
    if (!agent) throw AppError.notFound('agent');
    return { agent: toMessage(agent) };
  }

  async updateAgent(req: agentsV1.UpdateAgentRequest): Promise<agentsV1.UpdateAgentResponse> {
    const fields = fieldsOf(req.patch);
    const problems = [
      ...(fields.name === '' ? [{ field: 'name', message: 'must not be empty' }] : []),
      ...(fields.languages && !fields.languages.length ? [{ field: 'languages', message: 'needs at least one language' }] : []),
    ];
    if (problems.length) throw AppError.validation(problems);
    const agent = await this.agents.update(req.account_id, req.id, fields);
    if (!agent) throw AppError.notFound('agent');
    return { agent: toMessage(agent) };
  }

  async deleteAgent(req: agentsV1.DeleteAgentRequest): Promise<agentsV1.DeleteAgentResponse> {
    if (!(await this.agents.softDelete(req.account_id, req.id))) throw AppError.notFound('agent');
    return { id: req.id, deleted: true };
  }

  async listAgents(req: agentsV1.ListAgentsRequest): Promise<agentsV1.ListAgentsResponse> {
    const page = await this.agents.list(req.account_id, Math.min(Math.max(req.limit || 20, 1), 100), parsePosition(req.after));
    return { data: page.items.map(toMessage), has_more: page.hasMore, next: page.next };
  }
}
