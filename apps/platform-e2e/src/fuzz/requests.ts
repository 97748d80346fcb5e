import fc from 'fast-check';
import { hostileString, hugeText, pathId, percentEncode, wrongValue } from './hostile';
import { OpenApiDocument, Operation, resolve, Schema } from './openapi';

/** A request sent through an HTTP client: the path may hold any bytes a request line allows. */
export interface HttpCase {
  kind: 'http';
  method: string;
  template: string;
  /** Path and query, as written on the request line. */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What the generator meant, for reports of bodies too large to print. */
  note: string;
}

/** Bytes written on a socket by hand: protocol errors no HTTP client would send. */
export interface RawCase {
  kind: 'raw';
  /** `RAW`, and the framing error as the template: distinct failures are told apart by what was malformed. */
  method: 'RAW';
  template: string;
  text: string;
  note: string;
}

export type FuzzCase = HttpCase | RawCase;

/** What the fuzzer knows of the accounts: its own key, real ids of its own and of another account. */
export interface FuzzContext {
  key: string;
  ownIds: string[];
  foreignIds: string[];
}

const MAX_DEPTH = 4;

/** Values of a schema, each part now and then replaced by a value of the wrong type or hostile text. */
export function schemaValue(doc: OpenApiDocument, schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > MAX_DEPTH) return wrongValue;
  const s = resolve(doc, schema);
  return fc.oneof({ arbitrary: fittingValue(doc, s, depth), weight: 5 }, { arbitrary: wrongValue, weight: 1 });
}

function fittingValue(doc: OpenApiDocument, s: Schema, depth: number): fc.Arbitrary<unknown> {
  const alternatives = s.oneOf ?? s.anyOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((a) => schemaValue(doc, a, depth + 1)));
  if (s.enum?.length) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'object': {
      const props = Object.entries(s.properties ?? {});
      if (!props.length) {
        const values = typeof s.additionalProperties === 'object' ? schemaValue(doc, s.additionalProperties, depth + 1) : hostileString;
        return fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), hostileString), values, { maxKeys: 4 });
      }
      const record = fc.record(Object.fromEntries(props.map(([name, p]) => [name, schemaValue(doc, p, depth + 1)])), {
        requiredKeys: (s.required ?? []).filter((r) => s.properties?.[r]),
      });
      // An unknown field now and then: the contract refuses them, naming the field.
      return fc.tuple(record, fc.option(fc.tuple(hostileString, wrongValue), { freq: 8 })).map(([value, extra]) =>
        extra ? { ...(value as object), [extra[0] || 'unknown_field']: extra[1] } : value,
      );
    }
    case 'array':
      return fc.array(s.items ? schemaValue(doc, s.items, depth + 1) : wrongValue, { maxLength: 3 });
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000, max: s.maximum ?? 100_000 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'string':
      if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('en-US', '+15551234567', 'https://127.0.0.1:1/x', 'http://169.254.169.254/'), hostileString);
    default:
      return wrongValue;
  }
}

/** `[[[…]]]` or `{"a":{"a":…}}`, `depth` levels, as JSON text. */
export function nested(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

interface Body {
  body: Buffer;
  contentType?: string;
  note: string;
}

const json = (value: unknown, note: string): Body => ({ body: Buffer.from(JSON.stringify(value) ?? 'null'), contentType: 'application/json', note });

/** Bodies that are not the JSON object the operation takes, or that stress the parser. */
const STRUCTURAL_BODIES: fc.Arbitrary<Body> = fc.oneof(
  fc
    .tuple(fc.constantFrom(100, 1_000, 3_000, 10_000, 100_000), fc.constantFrom<'array' | 'object'>('array', 'object'), fc.boolean())
    .map(([depth, shape, wrapped]) => {
      const text = nested(depth, shape);
      return { body: Buffer.from(wrapped ? `{"name":${text}}` : text), contentType: 'application/json', note: `${shape} nesting ${depth} deep${wrapped ? ' under "name"' : ''}` };
    }),
  fc.constantFrom(1_001, 20_000).map((n) => json({ name: 'x', metadata: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'])) }, `${n} metadata keys`)),
  fc.constantFrom(10_001, 20_000).map((n) => json({ name: 'x', languages: new Array(n).fill({ code: 'en-US' }) }, `${n} languages`)),
  fc.constantFrom('{', '{"name":', '{"name":"x",}', '{"a":1}{', "{'a':1}", '{"a":1e99999}', '{"a":NaN}', '{"a":"\\ud800"}', '{"a":"\\u0000"}', '{"__proto__":{"x":1}}', '{"a":1,"a":2}', 'nul', '\ufeff{}').map((text) => ({ body: Buffer.from(text), contentType: 'application/json', note: 'malformed or odd JSON' })),
  fc.constantFrom(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), Buffer.from([0xc0, 0xaf]), Buffer.alloc(8)).map((body) => ({ body, contentType: 'application/json', note: 'invalid UTF-8' })),
  fc.constantFrom('[]', '1', '"x"', 'null', 'true', '').map((text) => ({ body: Buffer.from(text), contentType: 'application/json', note: 'a JSON value that is not an object' })),
);

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/jsonx',
  'application/merge-patch+json',
  '*/*',
  'application/json, text/plain',
  '',
];

function bodies(doc: OpenApiDocument, op: Operation): fc.Arbitrary<Body | undefined> {
  const value = op.body ? schemaValue(doc, op.body) : fc.dictionary(hostileString, wrongValue, { maxKeys: 3 });
  const fields = Object.keys((op.body && resolve(doc, op.body).properties) ?? { name: {} });
  return fc.oneof(
    { arbitrary: value.map((v) => json(v, 'generated from the schema')), weight: 16 },
    {
      arbitrary: fc.tuple(value, fc.constantFrom(...fields), hugeText).map(([v, field, text]) =>
        json({ ...(typeof v === 'object' && v && !Array.isArray(v) ? v : {}), [field]: text }, `${text.length} chars of ${JSON.stringify(text[0])} in "${field}"`),
      ),
      weight: 1,
    },
    { arbitrary: STRUCTURAL_BODIES, weight: 3 },
    { arbitrary: fc.tuple(value, fc.constantFrom(...CONTENT_TYPES)).map(([v, type]) => ({ ...json(v, `as ${type || 'no content type'}`), contentType: type || undefined })), weight: 2 },
    { arbitrary: fc.constant(undefined), weight: 2 },
  );
}

/** Query strings: declared parameters with fitting or wrong values, unknown ones, repeats, bad encodings. */
function queryString(doc: OpenApiDocument, op: Operation): fc.Arbitrary<string> {
  const encode = (v: unknown) => percentEncode(typeof v === 'string' ? v : JSON.stringify(v) ?? '');
  const declared = op.query.map(({ name, schema }) =>
    fc.option(
      fc.oneof(
        schemaValue(doc, schema).map((v) => `${name}=${encode(v)}`),
        fc.constantFrom('%', '%zz', '%ff%fe', '%00', '', '-1', '1e999', '1.5', '0x10').map((raw) => `${name}=${raw}`),
        fc.array(wrongValue, { minLength: 2, maxLength: 3 }).map((vs) => vs.map((v) => `${name}=${encode(v)}`).join('&')),
        fc.constant(`${name}[a]=1`),
      ),
      { freq: 2 },
    ),
  );
  const unknown = fc.option(
    fc.oneof(
      { arbitrary: fc.tuple(hostileString, hostileString).map(([k, v]) => `${percentEncode(k) || 'x'}=${percentEncode(v)}`), weight: 6 },
      { arbitrary: fc.constant(`x=${'a'.repeat(20_000)}`), weight: 1 },
    ),
    { freq: 4 },
  );
  return fc.tuple(fc.tuple(...declared), unknown).map(([parts, extra]) => {
    const all = [...parts, extra].filter((p): p is string => p !== null);
    return all.length ? `?${all.join('&')}` : '';
  });
}

/** Header values a client library can send (Latin-1 without controls). */
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength: 300 });

function authorization(context: FuzzContext): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { arbitrary: fc.constant(`Bearer ${context.key}`), weight: 12 },
    { arbitrary: fc.constantFrom(undefined, 'Bearer', 'Bearer ', 'Basic dTpw', `bearer ${context.key}`, `Bearer ${context.key} x`, 'Bearer vsk_'), weight: 1 },
    { arbitrary: headerText.map((t) => `Bearer ${t}`), weight: 1 },
  );
}

export function httpCase(doc: OpenApiDocument, op: Operation, context: FuzzContext): fc.Arbitrary<HttpCase> {
  const ids = fc.tuple(...op.pathParams.map(() => pathId([...context.ownIds, ...context.foreignIds])));
  const takesBody = op.method !== 'GET';
  return fc
    .record({
      ids,
      query: queryString(doc, op),
      body: takesBody ? bodies(doc, op) : fc.option(STRUCTURAL_BODIES, { freq: 10 }).map((b) => b ?? undefined),
      auth: authorization(context),
      idempotencyKey: fc.option(fc.oneof(headerText, fc.constant('k'.repeat(1000))), { freq: 6 }),
    })
    .map(({ ids, query, body, auth, idempotencyKey }) => {
      let i = 0;
      const path = op.template.replace(/\{[^}]+\}/g, () => ids[i++]);
      const headers: Record<string, string> = {};
      if (auth !== undefined) headers['authorization'] = auth;
      if (body?.contentType !== undefined) headers['content-type'] = body.contentType;
      if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
      return { kind: 'http' as const, method: op.method, template: op.template, target: path + query, headers, body: body?.body, note: body?.note ?? 'no body' };
    });
}

/** Protocol errors over a socket: bad request lines, header framing and body framing. */
export function rawCase(context: FuzzContext): fc.Arbitrary<RawCase> {
  const auth = `Authorization: Bearer ${context.key}\r\n`;
  const line = fc.oneof(
    fc.stringMatching(/^[A-Z]{1,12}$/).map((m) => `${m} /v1/agents HTTP/1.1`),
    fc.constantFrom('GET /v1/agents HTTP/9.9', 'GET /v1/agents', 'GET  /v1/agents HTTP/1.1', 'GET /v1/agents\u0000 HTTP/1.1', 'GET /v1/agents/%ff%fe HTTP/1.1', 'GET http://x/v1/agents HTTP/1.1', 'GET * HTTP/1.1', 'G\u00e9T /v1/agents HTTP/1.1'),
  );
  const framing = fc.constantFrom(
    { head: 'Host: x\r\n', body: '', note: 'plain' },
    { head: '', body: '', note: 'no Host' },
    { head: 'Host: x\r\nHost: y\r\n', body: '', note: 'two Hosts' },
    { head: 'Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n', body: '0\r\n\r\n', note: 'Content-Length and Transfer-Encoding' },
    { head: 'Host: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n', body: 'zz\r\n{}\r\n0\r\n\r\n', note: 'a bad chunk size' },
    { head: 'Host: x\r\nContent-Length: -1\r\n', body: '', note: 'a negative Content-Length' },
    { head: 'Host: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n', body: '{}', note: 'two Content-Lengths' },
    { head: 'Host: x\r\nNo colon here\r\n', body: '', note: 'a header line without a colon' },
    { head: 'Host: x\r\nX-Fold: a\r\n folded\r\n', body: '', note: 'an obsolete folded header' },
    { head: `Host: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n`, body: '', note: 'a 20 KB header' },
    { head: 'Host: x\r\nX-Nul: a\u0000b\r\n', body: '', note: 'NUL in a header value' },
  );
  return fc.tuple(line, framing).map(([requestLine, f]) => ({
    kind: 'raw' as const,
    method: 'RAW' as const,
    template: f.note,
    text: `${requestLine}\r\n${f.head}${auth}Connection: close\r\n\r\n${f.body}`,
    note: f.note,
  }));
}

/** Every operation of the document with equal weight, and protocol errors now and then. */
export function fuzzCase(doc: OpenApiDocument, operations: Operation[], context: FuzzContext): fc.Arbitrary<FuzzCase> {
  return fc.oneof(
    { arbitrary: fc.oneof(...operations.map((op) => httpCase(doc, op, context))), weight: 20 },
    { arbitrary: rawCase(context), weight: 1 },
  );
}
