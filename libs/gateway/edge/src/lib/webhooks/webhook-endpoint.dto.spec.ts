import 'reflect-metadata';
import { WEBHOOK_EVENT_TYPES } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { BodyValidationPipe } from '../http/validation';
import { isEventFilter, WEBHOOK_EVENT_FAMILIES, WEBHOOK_EVENT_FILTERS } from './event-filter';
import { RotateSecretInputDto, WebhookEndpointInputDto, WebhookEndpointPatchDto } from './webhook-endpoint.dto';

type Metatype = new () => object;
const pipe = new BodyValidationPipe();

async function check(metatype: Metatype, body: unknown): Promise<{ value?: unknown; error?: AppError }> {
  try {
    return { value: await pipe.transform(body, { type: 'body', metatype, data: undefined }) };
  } catch (error) {
    if (error instanceof AppError) return { error };
    throw error;
  }
}

/** The body is accepted. */
async function accepted(metatype: Metatype, body: unknown): Promise<void> {
  const { error } = await check(metatype, body);
  expect(error?.errors ?? error).toBeUndefined();
}

/** The body is refused with `code` (and its status), naming exactly `fields`. */
async function refused(metatype: Metatype, body: unknown, code: 'invalid_request' | 'validation_error', fields: string[]): Promise<AppError> {
  const { error } = await check(metatype, body);
  expect(error).toBeDefined();
  expect({ code: error?.code, status: error?.status, fields: error?.errors?.map((e) => e.field) }).toEqual({
    code,
    status: code === 'invalid_request' ? 400 : 422,
    fields,
  });
  return error as AppError;
}

const URL = 'https://example.com/hooks/parley';
const list = <T>(n: number, item: (i: number) => T) => Array.from({ length: n }, (_, i) => item(i));

describe('webhook event filters', () => {
  it('derives every family from the event catalogue', () => {
    expect([...WEBHOOK_EVENT_FAMILIES].sort()).toEqual(['call.*', 'call.recording.*', 'call.tool.*', 'call.transcript.*', 'csat.*', 'project.*', 'workflow_run.*', 'workflow_run.recipient.*']);
    expect(WEBHOOK_EVENT_FILTERS).toEqual(expect.arrayContaining(['*', ...WEBHOOK_EVENT_TYPES]));
  });

  it.each(['*', 'call.*', 'call.transcript.*', 'csat.*', ...WEBHOOK_EVENT_TYPES])('accepts %s', (entry) => {
    expect(isEventFilter(entry)).toBe(true);
  });

  it.each([
    'call.nope',
    'call',
    'calls.*',
    'call.**',
    '*.started',
    'call.started.*',
    '.*',
    'CALL.STARTED',
    ' call.started',
    '',
    'billing.*',
  ])('refuses %j', (entry) => {
    expect(isEventFilter(entry)).toBe(false);
  });

  it.each([1, null, undefined, {}, ['*']])('refuses a non-string %j', (entry) => {
    expect(isEventFilter(entry)).toBe(false);
  });
});

describe('WebhookEndpointInputDto', () => {
  it('accepts the smallest body (url only) and a full one', async () => {
    await accepted(WebhookEndpointInputDto, { url: URL });
    await accepted(WebhookEndpointInputDto, {
      url: URL,
      events: ['call.started', 'call.transcript.*', 'csat.*'],
      description: 'CRM sync',
      enabled: false,
      metadata: { team: 'ops' },
    });
  });

  it('does not fill defaults itself (absent stays absent, so a PATCH keeps what it does not name)', async () => {
    const { value } = await check(WebhookEndpointInputDto, { url: URL });
    expect(value).toBeInstanceOf(WebhookEndpointInputDto);
    expect({ ...(value as object) }).toEqual({ url: URL });
  });

  it('leaves the scheme and address to the service: any string URL passes here', async () => {
    await accepted(WebhookEndpointInputDto, { url: 'http://127.0.0.1:9/hook' });
    await accepted(WebhookEndpointInputDto, { url: 'not a url' });
  });

  it('refuses an unknown field with 400 invalid_request naming it', async () => {
    const error = await refused(WebhookEndpointInputDto, { url: URL, secret: 'whsec_mine' }, 'invalid_request', ['secret']);
    expect(error.errors).toEqual([{ field: 'secret', message: 'is not a known field' }]);
  });

  it('refuses an unknown event type with 422 at `events`, naming the entry', async () => {
    const error = await refused(WebhookEndpointInputDto, { url: URL, events: ['call.started', 'call.nope'] }, 'validation_error', ['events']);
    expect(error.errors?.[0].message).toContain('"call.nope" is none of these');
    expect(error.errors?.[0].message).toMatch(/^items must each be an event type \(call\.started, /);
  });

  it.each([
    ['an empty list', []],
    ['51 entries', list(51, () => '*')],
    ['a string instead of a list', '*'],
    ['null', null],
    ['a non-string entry', ['call.started', 7]],
    ['a repeated entry', ['call.started', 'call.started']],
    ['a family of no known type', ['call.started.*']],
  ])('refuses events as %s with 422 at `events`', async (_name, events) => {
    await refused(WebhookEndpointInputDto, { url: URL, events }, 'validation_error', ['events']);
  });

  it('accepts every filter at once', async () => {
    await accepted(WebhookEndpointInputDto, { url: URL, events: [...WEBHOOK_EVENT_FILTERS] });
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['not a string', 42],
    ['null', null],
    ['over 2000 characters', `https://example.com/${'x'.repeat(1981)}`],
  ])('refuses url %s', async (_name, url) => {
    await refused(WebhookEndpointInputDto, url === undefined ? {} : { url }, 'validation_error', ['url']);
  });

  it('accepts a 2000-character url', async () => {
    await accepted(WebhookEndpointInputDto, { url: `https://example.com/${'x'.repeat(1980)}` });
  });

  it.each([
    ['description', 'x'.repeat(2001)],
    ['description', 3],
    ['enabled', 'yes'],
    ['enabled', null],
    ['metadata', { k: 1 }],
    ['metadata', ['a']],
    ['metadata', Object.fromEntries(list(51, (i) => [`k${i}`, 'v']))],
  ])('refuses %s = %j with 422 at that field', async (field, value) => {
    await refused(WebhookEndpointInputDto, { url: URL, [field]: value }, 'validation_error', [field]);
  });

  it('reports every invalid field at once', async () => {
    await refused(WebhookEndpointInputDto, { url: 1, events: ['nope'], enabled: 'no' }, 'validation_error', ['url', 'events', 'enabled']);
  });
});

describe('WebhookEndpointPatchDto', () => {
  it('accepts an empty patch and single fields', async () => {
    await accepted(WebhookEndpointPatchDto, {});
    await accepted(WebhookEndpointPatchDto, { enabled: true });
    await accepted(WebhookEndpointPatchDto, { events: ['call.*'] });
  });

  it('does not inherit defaults (an absent field stays absent)', async () => {
    const { value } = await check(WebhookEndpointPatchDto, { enabled: false });
    expect({ ...(value as object) }).toEqual({ enabled: false });
  });

  it('refuses unknown fields with 400 and bad values with 422', async () => {
    await refused(WebhookEndpointPatchDto, { disabled_reason: 'x' }, 'invalid_request', ['disabled_reason']);
    await refused(WebhookEndpointPatchDto, { events: ['call.nope'] }, 'validation_error', ['events']);
    await refused(WebhookEndpointPatchDto, { url: null }, 'validation_error', ['url']);
  });
});

describe('RotateSecretInputDto', () => {
  it.each([[{}], [{ overlap_seconds: 0 }], [{ overlap_seconds: 86400 }], [{ overlap_seconds: 604800 }]])('accepts %j', async (body) => {
    await accepted(RotateSecretInputDto, body);
  });

  it('treats a missing body as an empty one', async () => {
    await accepted(RotateSecretInputDto, undefined);
  });

  it.each([-1, 604801, 1.5, '60', null])('refuses overlap_seconds = %j', async (overlap) => {
    await refused(RotateSecretInputDto, { overlap_seconds: overlap }, 'validation_error', ['overlap_seconds']);
  });

  it('refuses an unknown field with 400', async () => {
    await refused(RotateSecretInputDto, { overlap: 10 }, 'invalid_request', ['overlap']);
  });
});
