import 'reflect-metadata';
import { ArgumentMetadata } from '@nestjs/common';
import { AppError } from '@parley/rpc';
import { CreateAgentDto, LanguageEntryDto } from '../agents/agent.dto';
import { BodyValidationPipe } from './validation';

const pipe = new BodyValidationPipe();
const asBody: ArgumentMetadata = { type: 'body', metatype: CreateAgentDto, data: undefined };

async function rejection(value: unknown): Promise<AppError> {
  try {
    await pipe.transform(value, asBody);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected the body to be refused');
}

const valid = () => ({
  name: 'Front desk',
  description: 'Answers the phone',
  languages: [{ code: 'en-US' }, { code: 'fr-FR' }],
  metadata: { team: 'support' },
});

describe('BodyValidationPipe with CreateAgentDto', () => {
  it('passes a valid body and returns an instance of the DTO', async () => {
    const result = await pipe.transform(valid(), asBody);

    expect(result).toBeInstanceOf(CreateAgentDto);
    const dto = result as CreateAgentDto;
    expect(dto.languages[0]).toBeInstanceOf(LanguageEntryDto);
    expect({ ...dto, languages: dto.languages.map((l) => ({ ...l })) }).toEqual(valid());
  });

  it('passes a body with only the required fields', async () => {
    await expect(pipe.transform({ name: 'A', languages: [{ code: 'en' }] }, asBody)).resolves.toBeInstanceOf(CreateAgentDto);
  });

  it('refuses unknown top-level and nested fields with invalid_request listing each', async () => {
    const error = await rejection({ ...valid(), colour: 'red', languages: [{ code: 'en-US', accent: 'Texan' }] });

    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    expect(error.errors?.map((e) => e.field).sort()).toEqual(['colour', 'languages[0].accent']);
    expect(error.errors?.every((e) => e.message === 'is not a known field')).toBe(true);
    expect(error.message).toContain('colour');
    expect(error.message).toContain('languages[0].accent');
  });

  it('reports unknown fields before invalid ones', async () => {
    const error = await rejection({ name: '', languages: [], colour: 'red' });

    expect(error.code).toBe('invalid_request');
    expect(error.errors?.map((e) => e.field)).toEqual(['colour']);
  });

  it('reports every invalid field at once with validation_error', async () => {
    const error = await rejection({
      name: '',
      description: 42,
      languages: [{ code: 'en-US' }, { code: '' }],
      metadata: { team: 7 },
    });

    expect(error.code).toBe('validation_error');
    expect(error.status).toBe(422);
    expect(error.errors?.map((e) => e.field).sort()).toEqual(['description', 'languages[1].code', 'metadata', 'name']);
    // One message per field, without the property name repeated in front.
    for (const problem of error.errors ?? []) {
      expect(problem.message).not.toMatch(/^(name|description|code|metadata) /);
      expect(problem.message.length).toBeGreaterThan(0);
    }
  });

  it('reports missing required fields', async () => {
    const error = await rejection({});

    expect(error.code).toBe('validation_error');
    expect(error.errors?.map((e) => e.field).sort()).toEqual(['languages', 'name']);
  });

  it('refuses an empty languages list and a languages value that is not a list', async () => {
    expect((await rejection({ name: 'A', languages: [] })).errors?.map((e) => e.field)).toEqual(['languages']);
    expect((await rejection({ name: 'A', languages: 'en' })).errors?.map((e) => e.field)).toEqual(['languages']);
  });

  it.each([
    ['a string', 'hello'],
    ['a number', 42],
    ['an array', [{ name: 'A', languages: [{ code: 'en' }] }]],
    ['a boolean', true],
  ])('refuses %s as the body with invalid_request', async (_what, body) => {
    const error = await rejection(body);

    expect(error.code).toBe('invalid_request');
    expect(error.message).toBe('The body must be a JSON object.');
  });

  it('leaves values that are not bodies untouched', async () => {
    const query = { limit: '10', anything: true };

    await expect(pipe.transform(query, { type: 'query', metatype: CreateAgentDto, data: undefined })).resolves.toBe(query);
    await expect(pipe.transform('x', { type: 'body', metatype: Object, data: undefined })).resolves.toBe('x');
  });
});
