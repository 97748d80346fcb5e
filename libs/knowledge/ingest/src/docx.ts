import mammoth from 'mammoth';
import { extractHtmlBody } from './html';
import { describeError, IngestError } from './ingest-error';
import { ExtractedSection } from './types';

/**
 * A Word document through mammoth: converted to HTML (Heading 1…6 styles become h1…h6), then read as HTML so its
 * headings make sections. A file that is not a readable DOCX is `malformed`.
 */
export async function extractDocx(data: Buffer): Promise<{ title?: string; sections: ExtractedSection[] }> {
  let html: string;
  try {
    ({ value: html } = await mammoth.convertToHtml({ buffer: data }));
  } catch (error) {
    const said = describeError(error);
    // jszip's own words point at its documentation; say what it means instead.
    const reason = /central directory|zip file|corrupted zip/i.test(said) ? 'it is not a valid DOCX (ZIP) file' : said;
    throw new IngestError('malformed', `the DOCX could not be read: ${reason}`, { cause: error });
  }
  return extractHtmlBody(html);
}
