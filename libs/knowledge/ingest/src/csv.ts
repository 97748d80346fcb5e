import { IngestError } from './ingest-error';
import { ExtractedSection } from './types';

/**
 * The field separator: a comma (RFC 4180), unless the first line, outside quotes, has more semicolons or tabs (as
 * spreadsheets export in many locales).
 */
export function detectDelimiter(input: string): ',' | ';' | '\t' {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const c of input) {
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '\n' || c === '\r')) break;
    else if (!quoted && c in counts) counts[c as keyof typeof counts]++;
  }
  if (counts[';'] > counts[','] && counts[';'] >= counts['\t']) return ';';
  if (counts['\t'] > counts[','] && counts['\t'] > counts[';']) return '\t';
  return ',';
}

/**
 * RFC 4180 records: fields separated by commas (or the delimiter detectDelimiter finds), records by CRLF or LF; a
 * field in double quotes may hold delimiters, line breaks and doubled quotes (""). No CSV library is a dependency
 * of the workspace, hence this parser.
 */
export function parseCsv(text: string): string[][] {
  const input = text.replace(/^\uFEFF/, '');
  const delimiter = detectDelimiter(input);
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let quoteStartLine = 0;
  let line = 1;
  let i = 0;
  const endField = () => {
    record.push(field);
    field = '';
  };
  const endRecord = () => {
    endField();
    records.push(record);
    record = [];
  };
  while (i < input.length) {
    const c = input[i];
    if (quoted) {
      if (c === '"') {
        if (input[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        const next = input[i];
        if (next !== undefined && next !== delimiter && next !== '\n' && next !== '\r') {
          throw new IngestError('malformed', `the CSV has text after a closing quote on line ${line}`);
        }
        continue;
      }
      if (c === '\n') line++;
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') {
      quoted = true;
      quoteStartLine = line;
      i++;
    } else if (c === delimiter) {
      endField();
      i++;
    } else if (c === '\r' || c === '\n') {
      endRecord();
      i += c === '\r' && input[i + 1] === '\n' ? 2 : 1;
      line++;
    } else {
      field += c;
      i++;
    }
  }
  if (quoted) throw new IngestError('malformed', `the CSV has a quoted field opened on line ${quoteStartLine} that is never closed`);
  if (field !== '' || record.length > 0) endRecord();
  return records.filter((r) => r.some((f) => f.trim() !== ''));
}

/**
 * CSV: one section; the first record names the columns and every other record becomes its own paragraph,
 * "header: value; header: value" (empty values left out), so each row is found on its own.
 */
export function extractCsv(text: string): ExtractedSection[] {
  const records = parseCsv(text);
  if (records.length === 0) return [];
  const clean = (value: string) => value.replace(/\s+/g, ' ').trim();
  const headers = records[0].map((h, i) => clean(h) || `column ${i + 1}`);
  if (records.length === 1) return [{ headings: [], text: headers.join(', ') }];
  const rows = records.slice(1).map((record) =>
    record
      .map((value, i) => [headers[i] ?? `column ${i + 1}`, clean(value)] as const)
      .filter(([, value]) => value !== '')
      .map(([header, value]) => `${header}: ${value}`)
      .join('; '),
  );
  const body = rows.filter(Boolean).join('\n\n');
  return body ? [{ headings: [], text: body }] : [];
}
