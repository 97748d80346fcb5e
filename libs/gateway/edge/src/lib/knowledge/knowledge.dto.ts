import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIntBetween, IsMetadata, IsNested, IsNumberBetween, IsOneOf, IsText, mapSchema, METADATA_LIMITS, Optional, OptionalOrNull } from '../http/validators';

export const KB_NAME_MAX = 200;
export const KB_DESCRIPTION_MAX = 2000;
export const DOCUMENT_TITLE_MAX = 500;
export const DOCUMENT_URL_MAX = 2000;
export const SEARCH_QUERY_MAX = 1000;
export const SEARCH_LIMIT_MAX = 50;
/** A URL document's re-fetch interval, in hours: hourly to every 30 days. */
export const REFRESH_INTERVAL_MIN_HOURS = 1;
export const REFRESH_INTERVAL_MAX_HOURS = 720;
export const TEXT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/csv'] as const;
export const DOCUMENT_STATUSES = ['processing', 'ready', 'failed'] as const;
export const DOCUMENT_SOURCES = ['text', 'url', 'file'] as const;
/** A BCP-47 language tag: a primary subtag of 2-3 letters, then subtags of 1-8 letters or digits. */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;
/** A MIME type (`type/subtype`, parameters allowed). */
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;.*)?$/;

const METADATA_SCHEMA = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on every read.');

const LANGUAGE_DESCRIPTION =
  'BCP-47 tag of the documents\' language; decides how words are stemmed for search (PostgreSQL\'s english, french, ' +
  'german, spanish, italian, portuguese, dutch, russian, swedish, danish, finnish, norwegian, … configurations; other ' +
  'languages are searched without stemming).';

export class KnowledgeBaseInputDto {
  @ApiProperty({ minLength: 1, maxLength: KB_NAME_MAX, example: 'Help centre' })
  @IsText(KB_NAME_MAX, { min: 1 })
  name: string;

  @ApiPropertyOptional({ maxLength: KB_DESCRIPTION_MAX, default: '', example: 'Answers from our public FAQ and returns policy.' })
  @Optional()
  @IsText(KB_DESCRIPTION_MAX)
  description?: string;

  @ApiPropertyOptional({ maxLength: 35, default: 'en', example: 'en', description: LANGUAGE_DESCRIPTION })
  @Optional()
  @IsText(35, { min: 2, pattern: LANGUAGE_TAG, patternHint: 'a BCP-47 language tag such as en or fr-CA' })
  language?: string;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, example: { team: 'support' } })
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class KnowledgeBaseDto {
  @ApiProperty({ example: 'kb_4fT9aQ2LmZ8xV1cN0bR7sD' }) id: string;
  @ApiProperty({ enum: ['knowledge_base'] }) object: 'knowledge_base';
  @ApiProperty({ example: 'Help centre' }) name: string;
  @ApiProperty({ example: 'Answers from our public FAQ and returns policy.' }) description: string;
  @ApiProperty({ example: 'en', description: LANGUAGE_DESCRIPTION }) language: string;
  @ApiProperty({ ...METADATA_SCHEMA, example: { team: 'support' } }) metadata: Record<string, string>;
  @ApiProperty({ type: 'integer', example: 3, description: 'Documents in the base, whatever their status.' }) document_count: number;
  @ApiProperty({ type: 'integer', example: 42, description: 'Searchable chunks of its ready documents.' }) chunk_count: number;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) updated_at: string;
}

export class KnowledgeBaseListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [KnowledgeBaseDto] }) data: KnowledgeBaseDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class DeletedKnowledgeBaseDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['knowledge_base'] }) object: 'knowledge_base';
  @ApiProperty({ enum: [true] }) deleted: true;
}

export class DocumentFileDto {
  @ApiProperty({
    format: 'byte',
    description: 'The file, base64-encoded. PDF, DOCX, HTML, plain text, markdown and CSV are read.',
    example: 'JVBERi0xLjcKJeLjz9MK…',
  })
  @IsText(Number.MAX_SAFE_INTEGER, { min: 1 })
  data: string;

  @ApiProperty({
    example: 'application/pdf',
    description:
      'The file\'s media type: application/pdf, application/vnd.openxmlformats-officedocument.wordprocessingml.document, ' +
      'text/html, text/plain, text/markdown, text/csv.',
  })
  @IsText(255, { min: 3, pattern: CONTENT_TYPE, patternHint: 'a media type such as application/pdf' })
  content_type: string;
}

export class DocumentInputDto {
  @ApiPropertyOptional({
    maxLength: DOCUMENT_TITLE_MAX,
    example: 'Returns policy',
    description: 'Required with `text`; otherwise the document\'s own title (else its URL) is used when omitted.',
  })
  @Optional()
  @IsText(DOCUMENT_TITLE_MAX, { min: 1 })
  title?: string;

  @ApiPropertyOptional({
    description: 'The document as text (markdown welcome: its headings structure the chunks). Exactly one of `text`, `url`, `file`.',
    example: '# Returns\n\n## Refund policy\nYou can return any item within 30 days for a full refund.',
  })
  @Optional()
  @IsText(Number.MAX_SAFE_INTEGER, { min: 1 })
  text?: string;

  @ApiPropertyOptional({ enum: TEXT_CONTENT_TYPES, default: 'text/plain', description: 'How `text` is read; only with `text`.' })
  @Optional()
  @IsOneOf(TEXT_CONTENT_TYPES)
  content_type?: string;

  @ApiPropertyOptional({
    maxLength: DOCUMENT_URL_MAX,
    example: 'https://example.com/help/returns',
    description: 'A page fetched through the deployment\'s outbound guard (public addresses only) and reduced to its article.',
  })
  @Optional()
  @IsText(DOCUMENT_URL_MAX, { min: 1 })
  url?: string;

  @ApiPropertyOptional({ type: DocumentFileDto })
  @Optional()
  @IsNested(() => DocumentFileDto)
  file?: DocumentFileDto;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    minimum: REFRESH_INTERVAL_MIN_HOURS,
    maximum: REFRESH_INTERVAL_MAX_HOURS,
    example: 24,
    description:
      'Only with `url`: fetch the page again every so many hours; absent or null, never. A changed page replaces the ' +
      'document\'s chunks (it stays `ready` and searchable meanwhile), an unchanged one keeps them, and a failed ' +
      're-fetch keeps the previous content with `refresh_failure_reason`. A document whose first fetch failed is tried ' +
      'again at the same pace. Set at creation: to change it, delete the document and add it again.',
  })
  @OptionalOrNull()
  @IsIntBetween(REFRESH_INTERVAL_MIN_HOURS, REFRESH_INTERVAL_MAX_HOURS)
  refresh_interval_hours?: number | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, example: { source: 'zendesk' } })
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class DocumentDto {
  @ApiProperty({ example: 'doc_7Hk2pQ9sLw3Vn8xZc1bT4r' }) id: string;
  @ApiProperty({ enum: ['knowledge_document'] }) object: 'knowledge_document';
  @ApiProperty({ example: 'kb_4fT9aQ2LmZ8xV1cN0bR7sD' }) knowledge_base_id: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'Returns policy', description: 'Null until known (a URL or file takes its own title once ingested).' })
  title: string | null;
  @ApiProperty({ enum: DOCUMENT_SOURCES, example: 'text' }) source: string;
  @ApiPropertyOptional({ example: 'https://example.com/help/returns', description: 'Present when the document came from a URL.' }) url?: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'text/markdown', description: 'The input\'s media type; null for a URL until fetched.' })
  content_type: string | null;
  @ApiProperty({
    enum: DOCUMENT_STATUSES,
    example: 'ready',
    description: '`processing` from the moment it is added until it is searchable (`ready`) or could not be read (`failed`, with `failure_reason`).',
  })
  status: string;
  @ApiPropertyOptional({ example: 'the PDF could not be read', description: 'Why the document failed; present only when `failed`.' }) failure_reason?: string;
  @ApiProperty({ type: 'integer', example: 5120, description: 'Characters of text extracted (0 until ready).' }) characters: number;
  @ApiProperty({ type: 'integer', example: 6, description: 'Searchable chunks (0 until ready).' }) chunk_count: number;
  @ApiProperty({ type: 'integer', example: 5290, description: 'Size of the input in bytes (a URL\'s body once fetched).' }) bytes: number;
  @ApiProperty({ ...METADATA_SCHEMA, example: { source: 'zendesk' } }) metadata: Record<string, string>;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: REFRESH_INTERVAL_MIN_HOURS,
    maximum: REFRESH_INTERVAL_MAX_HOURS,
    example: 24,
    description: 'A URL document\'s page is fetched again every so many hours; null: never (always for text and files).',
  })
  refresh_interval_hours: number | null;
  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2026-01-06T10:00:01.000Z',
    description: 'When the content the document holds was last fetched (stored, or found unchanged by a re-fetch); null for text and files, and for a URL never fetched successfully.',
  })
  fetched_at: string | null;
  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2026-01-07T10:00:01.000Z',
    description: 'When the next re-fetch is due (taken up within about a minute); null without `refresh_interval_hours`.',
  })
  next_refresh_at: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'the URL answered HTTP 503',
    description:
      'Why the last re-fetch failed; the previous content is kept and searched, and the next re-fetch is due an interval later. ' +
      'Null when it did not fail (and once a later one succeeds). A document whose first fetch failed says why in `failure_reason` instead.',
  })
  refresh_failure_reason: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:02.000Z', description: 'When its content or status last changed.' }) updated_at: string;
}

export class DocumentListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [DocumentDto] }) data: DocumentDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class DeletedDocumentDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['knowledge_document'] }) object: 'knowledge_document';
  @ApiProperty({ enum: [true] }) deleted: true;
}

export class SearchInputDto {
  @ApiProperty({ minLength: 1, maxLength: SEARCH_QUERY_MAX, example: 'How long do I have to return an item?' })
  @IsText(SEARCH_QUERY_MAX, { min: 1 })
  query: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: SEARCH_LIMIT_MAX, default: 5 })
  @Optional()
  @IsIntBetween(1, SEARCH_LIMIT_MAX)
  limit?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, default: 0, example: 0.3, description: 'Leave out hits scoring below this.' })
  @Optional()
  @IsNumberBetween(0, 1)
  min_score?: number;
}

export class KnowledgeChunkDto {
  @ApiProperty({ enum: ['knowledge_chunk'] }) object: 'knowledge_chunk';
  @ApiProperty({ example: 'doc_7Hk2pQ9sLw3Vn8xZc1bT4r' }) document_id: string;
  @ApiProperty({ example: 'Returns policy', description: 'The document\'s title.' }) title: string;
  @ApiProperty({ example: 'Returns > Refund policy', description: 'The headings above the chunk, outermost first, joined by ` > `.' }) heading: string;
  @ApiProperty({ example: 'You can return any item within 30 days for a full refund.' }) text: string;
  @ApiProperty({
    minimum: 0,
    maximum: 1,
    example: 0.84,
    description: 'Relevance, 0-1: mostly how many of the query\'s terms the chunk holds (a misspelt term counts partly), then how densely (docs/knowledge.md).',
  })
  score: number;
}

export class SearchResultListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [KnowledgeChunkDto], description: 'Best first.' }) data: KnowledgeChunkDto[];
  @ApiProperty({ enum: [false], description: 'Always false: a search answers one page of at most `limit` hits.' }) has_more: false;
}
