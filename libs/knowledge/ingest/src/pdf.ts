import { extractText, getDocumentProxy } from 'unpdf';
import { describeError, IngestError } from './ingest-error';
import { ExtractedSection } from './types';
import { normalizeText } from './text-util';

/**
 * A PDF's text through unpdf (PDF.js): one section per page with text ("Page N"), the title from the document's
 * metadata or else its first line. A file PDF.js cannot open is `malformed`, with what PDF.js said.
 */
export async function extractPdf(data: Buffer): Promise<{ title?: string; sections: ExtractedSection[] }> {
  let pages: string[];
  let metadataTitle: string | undefined;
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>> | undefined;
  try {
    // PDF.js may transfer (detach) the buffer it is given: hand it a copy.
    pdf = await getDocumentProxy(new Uint8Array(data), { verbosity: 0 });
    ({ text: pages } = await extractText(pdf, { mergePages: false }));
    try {
      const { info } = (await pdf.getMetadata()) as { info?: { Title?: unknown } };
      if (typeof info?.Title === 'string') metadataTitle = info.Title.replace(/\s+/g, ' ').trim() || undefined;
    } catch {
      metadataTitle = undefined;
    }
  } catch (error) {
    const reason = describeError(error);
    if (/password/i.test(reason)) {
      throw new IngestError('malformed', 'the PDF could not be read: it is protected by a password', { cause: error });
    }
    throw new IngestError('malformed', `the PDF could not be read: ${reason}`, { cause: error });
  } finally {
    // Frees PDF.js's resources for this document (its worker-side state, fonts).
    await (pdf as unknown as { destroy?: () => Promise<void> } | undefined)?.destroy?.().catch(() => undefined);
  }
  const sections = pages
    .map((text, i) => ({ headings: [`Page ${i + 1}`], text: normalizeText(text) }))
    .filter((section) => section.text !== '');
  const firstLine = sections[0]?.text.split('\n')[0].trim();
  return { title: metadataTitle ?? (firstLine ? firstLine.slice(0, 200) : undefined), sections };
}
