import fc from 'fast-check';

/**
 * Text a strict server must refuse or store faithfully: NUL, unpaired surrogates, bidirectional controls,
 * byte-order marks, line breaks, template and injection look-alikes.
 */
export const HOSTILE_TEXT = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '\u202eevil\u202c',
  '\u200f\u200e\u2066',
  '\ufeff',
  '\r\n\r\nX-Injected: 1',
  '{{__proto__}}',
  '__proto__',
  '../../../etc/passwd',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '%00%ff%fe',
  '🙂‍↔️',
  '',
  ' ',
];

/** Strings around the body limit (1 MiB by default), made of a hostile or plain character. */
export const hugeText = fc
  .tuple(fc.constantFrom(100_000, 1_000_000, 1_048_000), fc.constantFrom('a', '\u0000', '\u202e', 'é', '\ud800'))
  .map(([length, unit]) => unit.repeat(length));

/** Any code unit sequence, lone surrogates included. */
const codeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 40 });

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE_TEXT), weight: 6 },
  { arbitrary: codeUnits, weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...HOSTILE_TEXT)).map(([a, b]) => a + b), weight: 2 },
);

/** A value of whatever type a field does not expect. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(0, -1, 1.5, 2 ** 53 + 1, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
);

/** Percent-encodes every byte of the UTF-8 form except unreserved characters (a lone surrogate becomes U+FFFD). */
export function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) => (/[A-Za-z0-9_~.-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

/** Path segments that are no id this platform could have given, written as they go on the wire. */
const ODD_IDS = [
  '%00',
  'agt_%00',
  '%ff%fe',
  '%ED%A0%80',
  '%',
  '%zz',
  '..%2f..%2fetc%2fpasswd',
  '..',
  '%2e%2e',
  '%20',
  'null',
  'undefined',
  '0',
  '-1',
  'agt_',
  'whep_',
  'call_',
  'vsk_',
];

/**
 * Path ids: odd ones, very long ones, hostile text, ids of other prefixes, and real ids — the caller's own (so
 * bodies reach deep validation) and another account's (which must stay out of reach).
 */
export function pathId(realIds: string[]): fc.Arbitrary<string> {
  const prefixes = ['agt_', 'grp_', 'whep_', 'call_', 'evt_', 'req_', 'vsk_', 'key_', ''];
  return fc.oneof(
    { arbitrary: fc.constantFrom(...ODD_IDS), weight: 4 },
    { arbitrary: hostileString.map(percentEncode), weight: 3 },
    { arbitrary: fc.tuple(fc.constantFrom(...prefixes), fc.integer({ min: 90, max: 2000 })).map(([p, n]) => p + 'a'.repeat(n)), weight: 1 },
    { arbitrary: fc.tuple(fc.constantFrom(...prefixes), fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/)).map(([p, s]) => p + s), weight: 2 },
    ...(realIds.length
      ? [
          { arbitrary: fc.constantFrom(...realIds), weight: 4 },
          // A real id under another prefix, or with a byte added: close to real, never real.
          { arbitrary: fc.tuple(fc.constantFrom(...realIds), fc.constantFrom(...prefixes)).map(([id, p]) => p + id.slice(id.indexOf('_') + 1)), weight: 1 },
          { arbitrary: fc.tuple(fc.constantFrom(...realIds), fc.constantFrom('%00', '%ff', 'x', '%2f..')).map(([id, s]) => id + s), weight: 1 },
        ]
      : []),
  );
}
