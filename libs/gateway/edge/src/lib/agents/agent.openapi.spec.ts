import 'reflect-metadata';
import { Body, Controller, Get, Patch, Post } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ApiOkResponse } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { buildOpenApiDocument } from '../http/openapi';
import {
  AgentGroupDto,
  AgentGroupInputDto,
  AgentGroupListDto,
  AgentGroupMembersDto,
  AgentGroupPatchDto,
  DeletedAgentGroupDto,
} from './agent-group.dto';
import {
  AgentDto,
  AgentInputDto,
  AgentListDto,
  AgentPatchDto,
  DeletedAgentDto,
  INHERITABLE_FIELDS,
  PostCallTestInputDto,
  PostCallTestResultDto,
} from './agent.dto';
import { FunctionListDto } from './function.dto';

@Controller('probe')
class ProbeController {
  @Post('agent') @ApiOkResponse({ type: AgentDto }) createAgent(@Body() _b: AgentInputDto) { return null; }
  @Patch('agent') @ApiOkResponse({ type: AgentListDto }) updateAgent(@Body() _b: AgentPatchDto) { return null; }
  @Post('test') @ApiOkResponse({ type: PostCallTestResultDto }) test(@Body() _b: PostCallTestInputDto) { return null; }
  @Post('group') @ApiOkResponse({ type: AgentGroupDto }) createGroup(@Body() _b: AgentGroupInputDto) { return null; }
  @Patch('group') @ApiOkResponse({ type: AgentGroupListDto }) updateGroup(@Body() _b: AgentGroupPatchDto) { return null; }
  @Get('members') @ApiOkResponse({ type: AgentGroupMembersDto }) members() { return null; }
  @Get('deleted-agent') @ApiOkResponse({ type: DeletedAgentDto }) deletedAgent() { return null; }
  @Get('deleted-group') @ApiOkResponse({ type: DeletedAgentGroupDto }) deletedGroup() { return null; }
  @Get('functions') @ApiOkResponse({ type: FunctionListDto }) functions() { return null; }
}

interface Schema extends Record<string, unknown> {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  description?: string;
}

describe('OpenAPI of the agent model', () => {
  let schemas: Record<string, Schema>;

  beforeAll(async () => {
    const module = await Test.createTestingModule({ controllers: [ProbeController] }).compile();
    const app = module.createNestApplication(new FastifyAdapter());
    await app.init();
    schemas = buildOpenApiDocument(app).components?.schemas as Record<string, Schema>;
    await app.close();
  });

  const props = (name: string) => schemas[name].properties ?? {};

  it('names the nested blocks distinctly (no generic Node/Edge/Request schema to collide with later resources)', () => {
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining(['FlowNodeDto', 'FlowEdgeDto', 'FlowConditionDto', 'ToolRequestDto', 'ToolParameterDto', 'TranscriptTurnDto']),
    );
    expect(Object.keys(schemas)).not.toEqual(expect.arrayContaining(['NodeDto']));
  });

  it('requires name and languages on input, and id, object, name, languages on output', () => {
    expect(schemas['AgentInputDto'].required?.sort()).toEqual(['languages', 'name']);
    expect(schemas['AgentPatchDto'].required ?? []).toEqual([]);
    expect(schemas['AgentDto'].required).toEqual(expect.arrayContaining(['id', 'object', 'name', 'languages']));
  });

  it('describes every input field', () => {
    const inputs = [
      ...['AgentInputDto', 'LanguageEntryDto', 'CapabilitiesDto', 'ConversationDto', 'PostCallDto', 'ExtractionFieldDto'],
      ...['FlowDto', 'FlowNodeDto', 'FlowEdgeDto', 'FlowExpressionDto', 'FlowConditionDto', 'FlowRoutingDto'],
      ...['ToolConfigDto', 'ToolCalendarDto', 'ApiKeyInputDto', 'ToolTransferDto', 'ToolRequestDto', 'ToolParameterDto'],
      ...['AgentGroupInputDto', 'GroupDefaultsDto', 'PostCallTestInputDto', 'TranscriptTurnDto'],
    ];
    const undocumented = inputs.flatMap((n) => Object.entries(props(n)).filter(([, s]) => !s.description).map(([p]) => `${n}.${p}`));
    expect(undocumented).toEqual([]);
  });

  it('documents ranges, integer types, defaults and limits', () => {
    expect(props('ConversationDto')['interrupt_words']).toMatchObject({ type: 'integer', minimum: 0, maximum: 10, default: 2 });
    expect(props('ConversationDto')['silence_prompt_seconds']).toMatchObject({ type: 'integer', minimum: -1, maximum: 60 });
    expect(props('AgentInputDto')['speed']).toMatchObject({ type: 'number', minimum: 0, maximum: 4 });
    expect(props('AgentInputDto')['languages']).toMatchObject({ type: 'array', minItems: 1, maxItems: 20 });
    expect(props('AgentInputDto')['tools']).toMatchObject({ type: 'array', maxItems: 50, items: { type: 'string', maxLength: 200 } });
    expect(props('AgentInputDto')['models']).toMatchObject({ type: 'object', additionalProperties: { type: 'string', maxLength: 200 } });
    expect(props('PostCallDto')['extraction']).toMatchObject({ type: 'array', maxItems: 40 });
    expect(props('ToolRequestDto')['timeout_seconds']).toMatchObject({ type: 'integer', minimum: 1, maximum: 30, default: 8 });
    expect((props('AgentInputDto')['overrides']['items'] as Schema)['enum']).toEqual([...INHERITABLE_FIELDS]);
  });

  it('leaves a condition value and a member difference untyped (any JSON)', () => {
    expect(props('FlowConditionDto')['value'].type).toBeUndefined();
    expect(props('AgentGroupMemberDifferenceDto')['agent'].type).toBeUndefined();
  });

  it('returns credentials only as hints and names', () => {
    expect(props('AgentDto')['tool_configs']).toMatchObject({ items: { $ref: '#/components/schemas/ToolConfigOutputDto' } });
    expect(Object.keys(props('ToolRequestOutputDto'))).toContain('secret_header_names');
    expect(Object.keys(props('ToolRequestOutputDto'))).not.toContain('secret_header_values');
    expect(Object.keys(props('ToolRequestDto'))).not.toContain('secret_header_names');
    expect(JSON.stringify(props('ToolCalendarOutputDto')['api_key'])).toContain('ApiKeyHintDto');
    expect(Object.keys(props('ApiKeyHintDto'))).toEqual(['hint']);
  });

  it('gives groups exactly the inheritable fields as defaults, and agents the same as their effective block', () => {
    expect(Object.keys(props('GroupDefaultsDto')).sort()).toEqual([...INHERITABLE_FIELDS].sort());
    expect(Object.keys(props('EffectiveConfigDto')).sort()).toEqual([...INHERITABLE_FIELDS].sort());
    expect(props('AgentDto')['effective']).toMatchObject({ readOnly: true });
  });
});
