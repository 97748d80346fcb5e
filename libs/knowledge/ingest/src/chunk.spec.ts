import fc from 'fast-check';
import { chunkDocument, splitSentences } from './chunk';
import { ExtractedDocument, ExtractedSection } from './types';

const doc = (sections: ExtractedSection[]): ExtractedDocument => ({
  sections,
  characters: sections.reduce((n, s) => n + s.text.length, 0),
});

/** Deterministic prose: numbered sentences of varied length. */
function prose(sentences: number, seed = 1): string {
  const words = ['refund', 'order', 'delivery', 'customer', 'account', 'support', 'policy', 'payment', 'invoice', 'return'];
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < sentences; i++) {
    const length = 6 + (i % 9);
    const ws: string[] = [];
    for (let j = 0; j < length; j++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      ws.push(words[x % words.length]);
    }
    out.push(`Sentence ${i + 1} is about the ${ws.join(' ')}.`);
  }
  return out.join(' ');
}

describe('chunkDocument', () => {
  it('keeps every chunk within maxChars, never cutting a word, numbering positions from 0', () => {
    const text = [prose(40, 1), prose(25, 2), prose(60, 3)].join('\n\n');
    const chunks = chunkDocument(doc([{ headings: ['Policy'], text }]), { maxChars: 300, overlapChars: 60 });
    expect(chunks.length).toBeGreaterThan(10);
    chunks.forEach((chunk, i) => {
      expect(chunk.position).toBe(i);
      expect(chunk.heading).toBe('Policy');
      expect(chunk.text.length).toBeLessThanOrEqual(300);
      // Every chunk starts and ends on a word boundary of the text.
      expect(text.replace(/\s+/g, ' ')).toContain(chunk.text.replace(/\s+/g, ' '));
      expect(chunk.text).toMatch(/^\S.*\S$/s);
    });
    const words = new Set(text.split(/\s+/));
    for (const chunk of chunks) for (const word of chunk.text.split(/\s+/)) expect(words.has(word)).toBe(true);
  });

  it('uses the defaults 1200 / 150', () => {
    const chunks = chunkDocument(doc([{ headings: [], text: prose(200) }]));
    expect(Math.max(...chunks.map((c) => c.text.length))).toBeLessThanOrEqual(1200);
    expect(Math.max(...chunks.map((c) => c.text.length))).toBeGreaterThan(1000);
    const sentencesOf = (t: string) => splitSentences(t);
    const first = sentencesOf(chunks[0].text);
    const second = sentencesOf(chunks[1].text);
    const repeated = second.filter((s) => first.includes(s)).join(' ');
    expect(repeated.length).toBeGreaterThan(0);
    expect(repeated.length).toBeLessThanOrEqual(150);
  });

  it('starts each chunk with whole sentences or words from the end of the previous one, about overlapChars long', () => {
    const chunks = chunkDocument(doc([{ headings: [], text: prose(80) }]), { maxChars: 400, overlapChars: 120 });
    let wholeSentences = 0;
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1].text;
      // The longest end of the previous chunk, cut at a space, that the chunk starts with.
      let overlap = '';
      for (let k = 1; k <= Math.min(previous.length, chunks[i].text.length); k++) {
        const tail = previous.slice(-k);
        if (previous[previous.length - k - 1] === ' ' && chunks[i].text.startsWith(tail)) overlap = tail;
      }
      expect(overlap.length).toBeGreaterThan(0);
      expect(overlap.length).toBeLessThanOrEqual(120);
      expect(chunks[i].text[overlap.length]).toBe(' ');
      if (/^Sentence \d+ /.test(overlap)) wholeSentences++;
    }
    expect(wholeSentences).toBeGreaterThan(chunks.length / 2);
  });

  it('follows structure: paragraphs stay whole when they fit, sections never share a chunk unless merged', () => {
    const a = 'Alpha paragraph one. It has two sentences.';
    const b = 'Alpha paragraph two.';
    const chunks = chunkDocument(
      doc([
        { headings: [], text: `${a}\n\n${b}` },
        { headings: ['Guide', 'Setup'], text: prose(12, 4) },
        { headings: ['Other'], text: 'Stand-alone section.' },
      ]),
      { maxChars: 400, overlapChars: 50 },
    );
    expect(chunks[0]).toEqual({ position: 0, heading: '', text: `${a}\n\n${b}` });
    expect(chunks.filter((c) => c.heading === 'Guide > Setup').length).toBeGreaterThan(1);
    expect(chunks[chunks.length - 1]).toMatchObject({ heading: 'Other', text: 'Stand-alone section.' });
    // No chunk of Setup carries text of another section.
    for (const c of chunks.filter((c) => c.heading === 'Guide > Setup')) expect(c.text).not.toMatch(/Alpha|Stand-alone/);
  });

  it('merges small sections with the next under the same parent heading while they fit', () => {
    const chunks = chunkDocument(
      doc([
        { headings: ['FAQ', 'Opening hours'], text: 'We open at 9.' },
        { headings: ['FAQ', 'Parking'], text: 'Parking is free.' },
        { headings: ['FAQ', 'Parking', 'Bikes'], text: 'Bike racks are at the back.' },
        { headings: ['Contact'], text: 'Call us.' },
        { headings: ['Pricing'], text: prose(20) },
      ]),
      { maxChars: 200 },
    );
    expect(chunks[0]).toEqual({ position: 0, heading: 'FAQ > Opening hours', text: 'We open at 9.\n\nParking\nParking is free.' });
    expect(chunks[1]).toEqual({ position: 1, heading: 'FAQ > Parking > Bikes', text: 'Bike racks are at the back.' });
    expect(chunks[2]).toEqual({ position: 2, heading: 'Contact', text: 'Call us.' });
    expect(chunks[3].heading).toBe('Pricing');
  });

  it('is deterministic', () => {
    const input = doc([{ headings: ['A'], text: `${prose(30)}\n\n${prose(30, 7)}` }, { headings: ['B'], text: prose(5) }]);
    expect(chunkDocument(input, { maxChars: 250, overlapChars: 40 })).toEqual(chunkDocument(input, { maxChars: 250, overlapChars: 40 }));
  });

  it('splits a sentence longer than maxChars between words, overlapping by whole words', () => {
    const sentence = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ') + '.';
    const chunks = chunkDocument(doc([{ headings: [], text: sentence }]), { maxChars: 100, overlapChars: 20 });
    expect(chunks.length).toBeGreaterThan(8);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(100);
      expect(c.text.split(' ').every((w) => /^word\d+\.?$/.test(w))).toBe(true);
    }
    for (let i = 1; i < chunks.length; i++) {
      const firstWord = chunks[i].text.split(' ')[0];
      expect(chunks[i - 1].text.split(' ')).toContain(firstWord);
    }
    // Nothing is lost.
    const seen = new Set(chunks.flatMap((c) => c.text.split(' ')));
    expect(seen.size).toBe(120);
  });

  it('keeps a word longer than maxChars whole, in a chunk of its own', () => {
    const giant = 'x'.repeat(250);
    const chunks = chunkDocument(doc([{ headings: [], text: `Before the token. ${giant} after it.` }]), { maxChars: 100, overlapChars: 30 });
    expect(chunks.map((c) => c.text)).toEqual(['Before the token.', giant, 'after it.']);
  });

  it('holds for any text: bounded, words whole and in order, nothing lost, positions in order, deterministic', () => {
    const word = fc.oneof(
      fc.constantFrom('a', 'refund', 'Order', 'policy.', 'Yes!', 'e.g.', 'Dr.', 'days?', '“quoted.”', '42', 'x'.repeat(70)),
      fc.stringMatching(/^[A-Za-z]{1,12}[.,!?]?$/),
    );
    const separator = fc.constantFrom(' ', ' ', ' ', '\n', '\n\n');
    const text = fc
      .array(fc.tuple(word, separator), { minLength: 1, maxLength: 200 })
      .map((parts) => parts.map(([w, sep]) => w + sep).join('').trim());
    const section = fc.record({
      headings: fc.array(fc.constantFrom('A', 'B', 'C'), { maxLength: 3 }),
      text,
    });
    fc.assert(
      fc.property(fc.array(section, { minLength: 1, maxLength: 5 }), fc.integer({ min: 20, max: 400 }), fc.integer({ min: 0, max: 200 }), (sections, maxChars, overlapChars) => {
        const input = doc(sections);
        const chunks = chunkDocument(input, { maxChars, overlapChars });
        expect(chunkDocument(input, { maxChars, overlapChars })).toEqual(chunks);
        chunks.forEach((chunk, i) => {
          expect(chunk.position).toBe(i);
          if (chunk.text.length > maxChars) expect(chunk.text).not.toMatch(/\s/);
          expect(chunk.text).toBe(chunk.text.trim());
        });
        // Every word of the document is in a chunk, each chunk's words are a run of the document's words.
        const docWords = sections.flatMap((s) => s.text.split(/\s+/).filter(Boolean));
        const joined = ` ${docWords.join(' ')} `;
        const seen = new Set<string>();
        for (const chunk of chunks) {
          const words = chunk.text.split(/\s+/).filter(Boolean);
          words.forEach((w) => seen.add(w));
          const run = ` ${words.join(' ')} `;
          // Merged sections add their heading as a line: only check chunks of unmerged text.
          if (!sections.some((s) => s.headings.length > 0)) expect(joined).toContain(run);
        }
        docWords.forEach((w) => expect(seen.has(w)).toBe(true));
      }),
      { numRuns: 300, seed: 20 },
    );
  });

  it('does not break sentences at abbreviations or before a lower-case word', () => {
    expect(splitSentences('Call Dr. Smith at 9 a.m. tomorrow. Then e.g. email us! Done? Yes.')).toEqual([
      'Call Dr. Smith at 9 a.m. tomorrow.',
      'Then e.g. email us!',
      'Done?',
      'Yes.',
    ]);
  });
});
