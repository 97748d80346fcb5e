import { extractCsv } from './csv';
import { extractDocx } from './docx';
import { extractHtml } from './html';
import { IngestError } from './ingest-error';
import { extractPdf } from './pdf';
import { extractMarkdown, extractPlainText } from './text';
import { DocumentInput, ExtractedDocument, ExtractedSection, ExtractLimits } from './types';

export const PDF = 'application/pdf';
export const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** The content types a file may have, in the order error messages list them. */
export const SUPPORTED_CONTENT_TYPES = [PDF, DOCX, 'text/plain', 'text/markdown', 'text/csv', 'text/html'] as const;

/** A media type without its parameters, lower case ("Text/HTML; charset=utf-8" → "text/html"). */
export function baseContentType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}

/** The charset parameter of a content type, when it names one TextDecoder knows. */
function charsetOf(contentType: string): string {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  if (!match) return 'utf-8';
  try {
    new TextDecoder(match[1]);
    return match[1];
  } catch {
    return 'utf-8';
  }
}

function decode(data: Buffer, contentType: string): string {
  return new TextDecoder(charsetOf(contentType)).decode(data);
}

/** Other spellings of the supported types, as servers and browsers send them. */
export const ALIASES_FOR_FETCH: Record<string, string> = {
  'text/x-markdown': 'text/markdown',
  'text/md': 'text/markdown',
  'application/csv': 'text/csv',
  'text/comma-separated-values': 'text/csv',
  'application/xhtml+xml': 'text/html',
  'application/x-pdf': PDF,
};

function unsupported(contentType: string): IngestError {
  const shown = contentType.trim() ? `"${contentType.trim()}"` : 'an empty content type';
  return new IngestError(
    'unsupported_type',
    `${shown} is not a supported document type; supported: ${SUPPORTED_CONTENT_TYPES.join(', ')}`,
  );
}

async function sectionsOf(input: DocumentInput): Promise<{ title?: string; sections: ExtractedSection[] }> {
  switch (input.kind) {
    case 'text':
      return textSections(input.text, input.contentType ?? 'text/markdown');
    case 'html':
      return extractHtml(input.html);
    case 'file': {
      const type = ALIASES_FOR_FETCH[baseContentType(input.contentType)] ?? baseContentType(input.contentType);
      if (type === PDF) return extractPdf(input.data);
      if (type === DOCX) return extractDocx(input.data);
      if (type === 'text/html') return extractHtml(decode(input.data, input.contentType));
      if (type === 'text/plain' || type === 'text/markdown' || type === 'text/csv') {
        return textSections(decode(input.data, input.contentType), type);
      }
      throw unsupported(input.contentType);
    }
    default:
      throw new IngestError('unsupported_type', `unknown document kind "${(input as { kind?: unknown }).kind}"`);
  }
}

function textSections(text: string, contentType: string): { title?: string; sections: ExtractedSection[] } {
  if (contentType === 'text/markdown') return extractMarkdown(text);
  if (contentType === 'text/plain') return { sections: extractPlainText(text) };
  if (contentType === 'text/csv') return { sections: extractCsv(text) };
  throw unsupported(contentType);
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * A document reduced to sections of text. Text without a content type is read as markdown (plain text with no
 * headings reads the same). Throws IngestError: `unsupported_type` for a content type not listed in
 * SUPPORTED_CONTENT_TYPES, `malformed` for a file that cannot be read, `empty` when there is no text and
 * `too_large` past `limits.maxCharacters`.
 */
export async function extractDocument(input: DocumentInput, limits: ExtractLimits): Promise<ExtractedDocument> {
  const { title, sections } = await sectionsOf(input);
  const characters = sections.reduce((sum, section) => sum + section.text.length, 0);
  if (characters === 0) {
    const scanned = input.kind === 'file' && baseContentType(input.contentType) === PDF;
    throw new IngestError(
      'empty',
      scanned ? 'the PDF has no text (a scanned PDF without a text layer cannot be read)' : 'the document has no text',
    );
  }
  if (characters > limits.maxCharacters) {
    throw new IngestError(
      'too_large',
      `the document has ${count(characters)} characters of text, more than the limit of ${count(limits.maxCharacters)}`,
    );
  }
  return { ...(title ? { title } : {}), sections, characters };
}
