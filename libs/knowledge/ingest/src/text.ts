import { ExtractedSection } from './types';
import { normalizeText, SectionCollector } from './text-util';

/** Plain text: one section, paragraphs split on blank lines. */
export function extractPlainText(text: string): ExtractedSection[] {
  const collector = new SectionCollector();
  for (const paragraph of normalizeText(text).split(/\n\s*\n/)) collector.paragraph(paragraph);
  return collector.finish();
}

const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** Inline markdown reduced to its text: links and images to their text, emphasis and code marks dropped. */
function inlineText(line: string): string {
  return line
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
    .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, '$2')
    .replace(/(^|[^\w*])[*_](?=\S)([^*_]+?)(?<=\S)[*_](?![\w*])/g, '$1$2')
    .replace(/`([^`]+)`/g, '$1')
    .replace(/<\/?[a-zA-Z][^>]*>/g, '');
}

/**
 * Markdown: ATX (`#`…`######`) and setext headings start sections, each keeping the path of headings above it;
 * blank lines separate paragraphs; fenced code is kept as text (a `#` inside it is no heading); link reference
 * definitions are dropped.
 */
export function extractMarkdown(text: string): { title?: string; sections: ExtractedSection[] } {
  const lines = normalizeText(text).split('\n');
  const collector = new SectionCollector();
  let title: string | undefined;
  let paragraph: string[] = [];
  let fence: string | undefined;

  const endParagraph = () => {
    if (paragraph.length > 0) collector.paragraph(paragraph.join('\n'));
    paragraph = [];
  };
  const heading = (level: number, raw: string) => {
    const text = inlineText(raw).trim();
    if (!text) return;
    if (level === 1 && title === undefined) title = text;
    collector.heading(level, text);
  };

  for (const line of lines) {
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined;
      else paragraph.push(line);
      continue;
    }
    const fenceOpen = FENCE.exec(line);
    if (fenceOpen) {
      fence = fenceOpen[1];
      continue;
    }
    const atx = ATX_HEADING.exec(line);
    if (atx) {
      endParagraph();
      heading(atx[1].length, atx[2] ?? '');
      continue;
    }
    const setext = SETEXT_UNDERLINE.exec(line);
    if (setext && paragraph.length === 1 && !/^\s*([-*+]|\d+[.)])\s/.test(paragraph[0])) {
      const raw = paragraph[0];
      paragraph = [];
      heading(setext[1].startsWith('=') ? 1 : 2, raw);
      continue;
    }
    if (line.trim() === '') {
      endParagraph();
      continue;
    }
    if (/^ {0,3}\[[^\]]+\]:\s*\S+/.test(line)) continue;
    if (/^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/.test(line)) {
      endParagraph();
      continue;
    }
    paragraph.push(inlineText(line.replace(/^ {0,3}>\s?/, '')));
  }
  endParagraph();
  return { title, sections: collector.finish() };
}
