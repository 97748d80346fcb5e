export { chunkDocument, DEFAULT_MAX_CHARS, DEFAULT_OVERLAP_CHARS } from './chunk';
export { extractDocument, SUPPORTED_CONTENT_TYPES } from './extract';
export { DEFAULT_FETCH_TIMEOUT_MS, fetchDocument } from './fetch';
export type { FetchDocumentOptions } from './fetch';
export { IngestError } from './ingest-error';
export type { IngestErrorCode } from './ingest-error';
export type { Chunk, ChunkOptions, DocumentInput, ExtractedDocument, ExtractedSection, ExtractLimits } from './types';
