import type { EgressPolicy } from '@parley/egress';

/*
 * What ingestion needs from @parley/knowledge-ingest (extraction, chunking, fetching), as an injected port: the
 * module wires the library's functions; tests give fakes (a failing extractor, a slow one).
 */

export type DocumentInput =
  | { kind: 'text'; text: string; contentType?: 'text/plain' | 'text/markdown' | 'text/csv' }
  | { kind: 'html'; html: string; url?: string }
  | { kind: 'file'; data: Buffer; contentType: string };

export interface ExtractedDocument {
  title?: string;
  sections: { headings: string[]; text: string }[];
  characters: number;
}

export interface Chunk {
  position: number;
  heading: string;
  text: string;
}

export interface IngestFunctions {
  extractDocument(input: DocumentInput, limits: { maxCharacters: number }): Promise<ExtractedDocument>;
  chunkDocument(doc: ExtractedDocument, options?: { maxChars?: number; overlapChars?: number }): Chunk[];
  fetchDocument(url: string, options: { egress: EgressPolicy; signal?: AbortSignal; maxBytes: number; timeoutMs?: number }): Promise<DocumentInput>;
}

export const INGEST_FUNCTIONS = Symbol('INGEST_FUNCTIONS');

/** An IngestError of the ingest library (its message is the document's failure reason). */
export function isIngestError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && error.name === 'IngestError' && typeof (error as { code?: unknown }).code === 'string';
}

/** The input's size in bytes. */
export function inputBytes(input: DocumentInput): number {
  if (input.kind === 'text') return Buffer.byteLength(input.text);
  if (input.kind === 'html') return Buffer.byteLength(input.html);
  return input.data.length;
}

/** The input's media type (what a fetched URL turned out to be). */
export function inputContentType(input: DocumentInput): string {
  if (input.kind === 'html') return 'text/html';
  if (input.kind === 'file') return input.contentType;
  return input.contentType ?? 'text/plain';
}
