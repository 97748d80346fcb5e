/** What a document is given as: text (markdown welcome), an HTML page, or a file's bytes with its content type. */
export type DocumentInput =
  | { kind: 'text'; text: string; contentType?: 'text/plain' | 'text/markdown' | 'text/csv' }
  | { kind: 'html'; html: string; url?: string }
  | { kind: 'file'; data: Buffer; contentType: string };

/** A run of text under one heading; `headings` is the path of headings above it (outermost first). */
export interface ExtractedSection {
  headings: string[];
  text: string;
}

/** A document reduced to its text: sections in document order; `characters` is the sum of the sections' text. */
export interface ExtractedDocument {
  title?: string;
  sections: ExtractedSection[];
  characters: number;
}

/** One piece of a document to index: `heading` is its section's heading path joined with ' > '. */
export interface Chunk {
  position: number;
  heading: string;
  text: string;
}

export interface ExtractLimits {
  /** Most characters of text a document may have once extracted. */
  maxCharacters: number;
}

export interface ChunkOptions {
  /** Longest chunk, in characters (default 1200); only a single word longer than this makes a longer chunk. */
  maxChars?: number;
  /** About how many characters of whole sentences or words a chunk repeats from the previous one (default 150). */
  overlapChars?: number;
}
