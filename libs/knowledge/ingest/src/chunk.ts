import { Chunk, ChunkOptions, ExtractedDocument, ExtractedSection } from './types';

export const DEFAULT_MAX_CHARS = 1200;
export const DEFAULT_OVERLAP_CHARS = 150;

/** A piece a chunk is made of (a sentence, or a word of a sentence too long for one chunk) and what joins it to the one before. */
interface Atom {
  text: string;
  sep: '\n\n' | '\n' | ' ';
}

/** Words after which a full stop does not end a sentence. */
const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'sr', 'jr', 'vs', 'etc', 'e.g', 'i.e', 'no', 'nos', 'inc', 'ltd', 'co',
  'corp', 'approx', 'dept', 'est', 'fig', 'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct',
  'nov', 'dec', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun', 'ca', 'cf', 'al',
]);

/**
 * Sentences of one line: a break after . ! ? … (and closing quotes or brackets) followed by space, unless the
 * next word starts in lower case or the full stop ends an abbreviation or an initial.
 */
export function splitSentences(line: string): string[] {
  const sentences: string[] = [];
  const boundary = /([.!?…。！？]+)["'”’)\]]*(\s+)(?=\S)/gu;
  let start = 0;
  for (let match = boundary.exec(line); match; match = boundary.exec(line)) {
    const end = match.index + match[0].length - match[2].length;
    const next = line[match.index + match[0].length];
    if (next.toLowerCase() !== next.toUpperCase() && next === next.toLowerCase()) continue;
    if (match[1] === '.') {
      const word = /(\S+)$/.exec(line.slice(start, match.index))?.[1]?.replace(/^["'“‘([]+/, '').toLowerCase() ?? '';
      if (ABBREVIATIONS.has(word) || /^\p{L}$/u.test(word)) continue;
    }
    sentences.push(line.slice(start, end));
    start = match.index + match[0].length;
  }
  sentences.push(line.slice(start));
  return sentences.filter((s) => s.trim() !== '');
}

/** A section's text as atoms: paragraphs, then lines, then sentences; a sentence longer than maxChars as words. */
function atomsOf(text: string, maxChars: number): Atom[] {
  const atoms: Atom[] = [];
  let sep: Atom['sep'] = '\n\n';
  for (const paragraph of text.split(/\n[ \t]*\n/)) {
    sep = '\n\n';
    for (const line of paragraph.split('\n')) {
      if (line.trim() === '') continue;
      for (const sentence of splitSentences(line.trimEnd())) {
        if (sentence.length <= maxChars) {
          atoms.push({ text: sentence, sep });
        } else {
          for (const word of sentence.split(/\s+/).filter(Boolean)) {
            atoms.push({ text: word, sep });
            sep = ' ';
          }
        }
        sep = ' ';
      }
      sep = '\n';
    }
  }
  return atoms;
}

function lengthOf(atoms: Atom[]): number {
  return atoms.reduce((sum, atom, i) => sum + atom.text.length + (i === 0 ? 0 : atom.sep.length), 0);
}

function render(atoms: Atom[]): string {
  return atoms.map((atom, i) => (i === 0 ? atom.text : atom.sep + atom.text)).join('');
}

/**
 * What the next chunk repeats of `chunk`: its last whole sentences within `overlapChars`; when even the last
 * sentence is longer, its last whole words within it.
 */
function overlapOf(chunk: Atom[], overlapChars: number): Atom[] {
  if (overlapChars <= 0) return [];
  const kept: Atom[] = [];
  let total = 0;
  for (let i = chunk.length - 1; i >= 0; i--) {
    const added = chunk[i].text.length + (kept.length > 0 ? kept[0].sep.length : 0);
    if (total + added > overlapChars) break;
    kept.unshift(chunk[i]);
    total += added;
  }
  if (kept.length > 0) return kept;
  const words = chunk[chunk.length - 1].text.split(/\s+/).filter(Boolean);
  const tail: Atom[] = [];
  total = 0;
  for (let i = words.length - 1; i >= 0; i--) {
    const added = words[i].length + (tail.length > 0 ? 1 : 0);
    if (total + added > overlapChars) break;
    tail.unshift({ text: words[i], sep: ' ' });
    total += added;
  }
  return tail;
}

/** A section's text packed into chunk texts of at most maxChars, each starting with the overlap of the one before. */
function pack(text: string, maxChars: number, overlapChars: number): string[] {
  const out: string[] = [];
  let current: Atom[] = [];
  let length = 0;
  for (const atom of atomsOf(text, maxChars)) {
    if (current.length === 0) {
      current = [atom];
      length = atom.text.length;
      continue;
    }
    if (length + atom.sep.length + atom.text.length <= maxChars) {
      current.push(atom);
      length += atom.sep.length + atom.text.length;
      continue;
    }
    out.push(render(current));
    const overlap = overlapOf(current, overlapChars);
    while (overlap.length > 0 && lengthOf(overlap) + atom.sep.length + atom.text.length > maxChars) overlap.shift();
    current = [...overlap, atom];
    length = lengthOf(current);
  }
  if (current.length > 0) out.push(render(current));
  return out;
}

const sameParent = (a: string[], b: string[]) =>
  a.length > 0 && a.length === b.length && a.slice(0, -1).every((heading, i) => heading === b[i]);

/**
 * Sections merged while they fit in one chunk: a section joins the one before when both sit under the same parent
 * heading (siblings, or pages); its own heading is kept as a line above its text and the chunk keeps the first
 * section's heading path. Sections without headings are never merged.
 */
function mergeSmallSections(sections: ExtractedSection[], maxChars: number): { headings: string[]; text: string }[] {
  const units: { headings: string[]; last: string[]; text: string }[] = [];
  for (const section of sections) {
    const text = section.text.trim();
    if (!text) continue;
    const previous = units[units.length - 1];
    if (previous && sameParent(previous.last, section.headings)) {
      const addition = `${section.headings[section.headings.length - 1]}\n${text}`;
      if (previous.text.length + 2 + addition.length <= maxChars) {
        previous.text += `\n\n${addition}`;
        previous.last = section.headings;
        continue;
      }
    }
    units.push({ headings: section.headings, last: section.headings, text });
  }
  return units;
}

/**
 * Splits a document into chunks that follow its structure: sections (small siblings merged while they fit), then
 * paragraphs, lines and sentences, never cutting a word and never longer than maxChars unless a single word is.
 * Within a section each chunk starts with about overlapChars of whole sentences (or words) from the end of the
 * one before. Positions count from 0 in document order. Deterministic: the same document gives the same chunks.
 */
export function chunkDocument(doc: ExtractedDocument, options: ChunkOptions = {}): Chunk[] {
  const maxChars = Math.max(1, Math.floor(options.maxChars ?? DEFAULT_MAX_CHARS));
  const overlapChars = Math.min(maxChars - 1, Math.max(0, Math.floor(options.overlapChars ?? DEFAULT_OVERLAP_CHARS)));
  const chunks: Chunk[] = [];
  for (const unit of mergeSmallSections(doc.sections, maxChars)) {
    const heading = unit.headings.join(' > ');
    for (const text of pack(unit.text, maxChars, overlapChars)) {
      chunks.push({ position: chunks.length, heading, text });
    }
  }
  return chunks;
}
