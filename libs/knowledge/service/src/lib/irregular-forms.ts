/**
 * English words whose forms the `english` stemmer (Snowball) does not bring to one lexeme, because they change
 * inside rather than at the end: `came` and `comes` are the lexemes `came` and `come`, `bought` is not `buy`,
 * `children` is not `child` (docs/knowledge.md, Search ranking, 2). A caller tells what happened in the past tense
 * ("I bought it", "it broke", "the driver came") while a knowledge base states it in the present ("the courier
 * comes"), so a query term that is one of these forms also matches the others, weighing as the word itself.
 *
 * Each group is one word's forms (verbs: base, past, past participle, and a third person the stemmer mangles,
 * `goes` → `goe`). Not a synonym list: only inflections of the same word. Forms that are also common words of
 * another meaning are left out (`saw`, `left`, `felt`, `lead`/`led`, `bit`, `lay`, `lit`, `rose`, `spoke`, `won`,
 * `leaves`, `lives`).
 */
const GROUPS: readonly (readonly string[])[] = [
  ['begin', 'began', 'begun'],
  ['bend', 'bent'],
  ['blow', 'blew', 'blown'],
  ['break', 'broke', 'broken'],
  ['bring', 'brought'],
  ['build', 'built'],
  ['burn', 'burnt'],
  ['buy', 'bought'],
  ['catch', 'caught'],
  ['choose', 'chose', 'chosen'],
  ['come', 'came'],
  ['deal', 'dealt'],
  ['dig', 'dug'],
  ['draw', 'drew', 'drawn'],
  ['drink', 'drank', 'drunk'],
  ['drive', 'drove', 'driven'],
  ['eat', 'ate', 'eaten'],
  ['fall', 'fell', 'fallen'],
  ['feed', 'fed'],
  ['fight', 'fought'],
  ['find', 'found'],
  ['fly', 'flew', 'flown'],
  ['forget', 'forgot', 'forgotten'],
  ['freeze', 'froze', 'frozen'],
  ['get', 'got', 'gotten'],
  ['give', 'gave', 'given'],
  ['go', 'went', 'gone', 'goes'],
  ['grow', 'grew', 'grown'],
  ['hang', 'hung'],
  ['hear', 'heard'],
  ['hide', 'hid', 'hidden'],
  ['hold', 'held'],
  ['keep', 'kept'],
  ['know', 'knew', 'known'],
  ['lend', 'lent'],
  ['lose', 'lost'],
  ['make', 'made'],
  ['mean', 'meant'],
  ['meet', 'met'],
  ['pay', 'paid'],
  ['ride', 'rode', 'ridden'],
  ['ring', 'rang', 'rung'],
  ['run', 'ran'],
  ['say', 'said', 'says'],
  ['see', 'seen'],
  ['sell', 'sold'],
  ['send', 'sent'],
  ['shake', 'shook', 'shaken'],
  ['show', 'shown'],
  ['shrink', 'shrank', 'shrunk'],
  ['sing', 'sang', 'sung'],
  ['sink', 'sank', 'sunk'],
  ['sit', 'sat'],
  ['sleep', 'slept'],
  ['speak', 'spoken'],
  ['spend', 'spent'],
  ['spin', 'spun'],
  ['stand', 'stood'],
  ['steal', 'stole', 'stolen'],
  ['stick', 'stuck'],
  ['strike', 'struck'],
  ['swim', 'swam', 'swum'],
  ['take', 'took', 'taken'],
  ['teach', 'taught'],
  ['tear', 'tore', 'torn'],
  ['tell', 'told'],
  ['think', 'thought'],
  ['throw', 'threw', 'thrown'],
  ['understand', 'understood'],
  ['wake', 'woke', 'woken'],
  ['wear', 'wore', 'worn'],
  ['write', 'wrote', 'written'],
  // nouns
  ['child', 'children'],
  ['person', 'people'],
  ['man', 'men'],
  ['woman', 'women'],
  ['foot', 'feet'],
  ['tooth', 'teeth'],
  ['mouse', 'mice'],
  ['knife', 'knives'],
  ['shelf', 'shelves'],
  ['half', 'halves'],
];

const FORMS = new Map<string, readonly string[]>(GROUPS.flatMap((group) => group.map((form) => [form, group.filter((other) => other !== form)] as const)));

/** For each word of `query` that is an irregular form under `config`, the word and each of its other forms. */
export function irregularForms(config: string, query: string): { word: string; form: string }[] {
  if (config !== 'english') return [];
  const out: { word: string; form: string }[] = [];
  for (const word of new Set(query.toLowerCase().match(/\p{L}+/gu) ?? [])) {
    for (const form of FORMS.get(word) ?? []) out.push({ word, form });
  }
  return out;
}
