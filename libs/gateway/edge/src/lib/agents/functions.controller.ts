import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { Operation } from '../http/operation';
import { FunctionDto, FunctionListDto } from './function.dto';
import { AgentsClient } from './agents.client';

@ApiTags('Functions')
@Controller('v1/functions')
export class FunctionsController {
  constructor(private readonly agents: AgentsClient) {}

  @Get()
  @Operation({
    summary: 'List the registered functions agents may name in `tools`',
    description: 'Declared by the deployment (FUNCTIONS_FILE). The whole catalogue fits one page.',
    permission: 'agents:read',
    list: true,
  })
  @ApiOkResponse({ type: FunctionListDto })
  async list(): Promise<FunctionListDto> {
    const res = await this.agents.call('listFunctions', (s, md) => s.listFunctions({}, md));
    const data: FunctionDto[] = res.data.map((f) => ({
      object: 'function',
      name: f.name,
      description: f.description,
      parameters: JSON.parse(f.parameters_json),
    }));
    return { object: 'list', data, has_more: false };
  }
}
