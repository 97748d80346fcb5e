import { createHash } from 'node:crypto';
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

/** The input's bytes: the text or page as UTF-8 (a page as decoded from its charset), the file's data. */
function inputData(input: DocumentInput): Buffer | string {
  if (input.kind === 'text') return input.text;
  if (input.kind === 'html') return input.html;
  return input.data;
}

/** The input's size in bytes. */
export function inputBytes(input: DocumentInput): number {
  return Buffer.byteLength(inputData(input));
}

/**
 * The hex SHA-256 of the input's bytes (the same bytes inputBytes counts): a fetched body's digest, which tells a
 * re-fetch whether the page changed.
 */
export function inputSha256(input: DocumentInput): string {
  return createHash('sha256').update(inputData(input)).digest('hex');
}

/** The input's media type (what a fetched URL turned out to be). */
export function inputContentType(input: DocumentInput): string {
  if (input.kind === 'html') return 'text/html';
  if (input.kind === 'file') return input.contentType;
  return input.contentType ?? 'text/plain';
}
