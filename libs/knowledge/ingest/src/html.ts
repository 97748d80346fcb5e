import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { ExtractedSection } from './types';
import { collapseSpaces, normalizeText, SectionCollector } from './text-util';

/** The little of the DOM walked here (linkedom's nodes; the workspace compiles without the DOM library). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}

interface DomElement extends DomNode {
  remove(): void;
  closest(selector: string): DomElement | null;
}

interface DomDocument extends DomNode {
  title?: string;
  body?: DomNode | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}

const ELEMENT = 1;
const TEXT = 3;

/** Never text: scripts, styles, embedded media and form controls. */
const SKIPPED = new Set([
  'script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'embed', 'head', 'select',
  'option', 'button', 'input', 'textarea', 'audio', 'video', 'picture', 'map',
]);
/** Page furniture, dropped before the article is looked for (a page header only outside the article or main). */
const FURNITURE = ['nav', 'footer', 'aside', '[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[role="search"]', '[aria-hidden="true"]'];
const BLOCKS = new Set([
  'p', 'div', 'section', 'article', 'main', 'blockquote', 'figure', 'figcaption', 'address', 'dl', 'dt', 'dd',
  'header', 'footer', 'nav', 'aside', 'hr', 'details', 'summary', 'caption', 'center', 'fieldset', 'legend', 'body', 'html',
]);

/**
 * Turns a DOM subtree into sections: h1–h6 start sections (with the path of headings above them), block elements
 * make paragraphs, list items become "- item" lines and table rows "cell | cell" lines, kept together as one
 * paragraph per list or table; <pre> keeps its line breaks.
 */
class DomSections {
  private readonly collector = new SectionCollector();
  private inline = '';
  private lines: string[] = [];
  private listDepth = 0;
  private itemDepth = 0;

  /** `topHeadings`: texts of the page's h1 elements, level 1 wherever they are (Readability turns h1 into h2). */
  constructor(private readonly topHeadings: ReadonlySet<string> = new Set()) {}

  walk(node: DomNode): this {
    if (node.nodeType === TEXT) {
      this.inline += node.textContent ?? '';
      return this;
    }
    if (node.nodeType !== ELEMENT && node.nodeType !== 9 && node.nodeType !== 11) return this;
    const tag = node.nodeName.toLowerCase();
    if (SKIPPED.has(tag)) return this;
    const heading = /^h([1-6])$/.exec(tag);
    if (heading) {
      this.endInline();
      this.endLines();
      const text = collapseSpaces(node.textContent ?? '');
      if (text) this.collector.heading(this.topHeadings.has(text) ? 1 : Number(heading[1]), text);
      return this;
    }
    switch (tag) {
      case 'br':
        this.inline += '\n';
        return this;
      case 'ul':
      case 'ol':
      case 'menu':
        this.endInline();
        this.listDepth++;
        this.children(node);
        this.listDepth--;
        if (this.listDepth === 0) this.endLines();
        return this;
      case 'li':
        this.endInline();
        this.itemDepth++;
        this.children(node);
        this.endInline();
        this.itemDepth--;
        return this;
      case 'table':
        this.endInline();
        this.endLines();
        this.children(node);
        this.endInline();
        this.endLines();
        return this;
      case 'tr': {
        this.endInline();
        const cells = Array.from(node.childNodes)
          .filter((c) => c.nodeType === ELEMENT && /^t[dh]$/i.test(c.nodeName))
          .map((c) => collapseSpaces(c.textContent ?? ''));
        if (cells.some(Boolean)) this.lines.push(cells.join(' | '));
        return this;
      }
      case 'pre': {
        this.endInline();
        this.endLines();
        this.collector.paragraph(node.textContent ?? '');
        return this;
      }
    }
    if (BLOCKS.has(tag) && this.itemDepth === 0) {
      this.endInline();
      this.endLines();
      this.children(node);
      this.endInline();
      return this;
    }
    if (BLOCKS.has(tag)) this.inline += ' ';
    this.children(node);
    if (BLOCKS.has(tag)) this.inline += ' ';
    return this;
  }

  finish(): ExtractedSection[] {
    this.endInline();
    this.endLines();
    return this.collector.finish();
  }

  private children(node: DomNode): void {
    for (const child of Array.from(node.childNodes)) this.walk(child);
  }

  /** The inline text so far: a list line inside a list, else a paragraph of its own. */
  private endInline(): void {
    const text = this.inline
      .split('\n')
      .map((line) => collapseSpaces(line))
      .filter(Boolean)
      .join('\n');
    this.inline = '';
    if (!text) return;
    if (this.listDepth > 0) {
      const indent = '  '.repeat(Math.max(0, this.listDepth - 1));
      this.lines.push(`${indent}- ${text.replace(/\n/g, ' ')}`);
    } else {
      this.endLines();
      this.collector.paragraph(text);
    }
  }

  private endLines(): void {
    if (this.lines.length > 0) this.collector.paragraph(this.lines.join('\n'));
    this.lines = [];
  }
}

function parseDocument(html: string): DomDocument {
  const wrapped = /<html[\s>]/i.test(html) ? html : `<!DOCTYPE html><html><head></head><body>${html}</body></html>`;
  return parseHTML(wrapped).document as unknown as DomDocument;
}

/** Navigation, footers, asides, banners and hidden parts removed (Readability keeps some of them on short pages). */
function removeFurniture(document: DomDocument): void {
  for (const selector of FURNITURE) {
    for (const node of Array.from(document.querySelectorAll(selector))) node.remove();
  }
  for (const header of Array.from(document.querySelectorAll('header'))) {
    if (!header.closest('article, main, [role="main"]')) header.remove();
  }
}

function firstHeading(sections: ExtractedSection[]): string | undefined {
  return sections.find((s) => s.headings.length > 0)?.headings[0];
}

/** An HTML fragment or document read whole (no reader view): what mammoth makes of a DOCX. */
export function extractHtmlBody(html: string): { title?: string; sections: ExtractedSection[] } {
  const document = parseDocument(html);
  const sections = new DomSections().walk(document.body ?? document).finish();
  const title = collapseSpaces(document.title ?? '') || firstHeading(sections);
  return { title: title || undefined, sections };
}

/**
 * A web page reduced to its article by Readability (Firefox's reader view) on linkedom: the title from it, its
 * headings, paragraphs, lists and tables. Navigation, footers, asides and the page header are removed first; when
 * Readability finds no article, the rest of the body is read instead.
 */
export function extractHtml(html: string): { title?: string; sections: ExtractedSection[] } {
  const document = parseDocument(html);
  removeFurniture(document);
  const topHeadings = new Set(Array.from(document.querySelectorAll('h1')).map((h) => collapseSpaces(h.textContent ?? '')));
  let article: ReturnType<Readability<DomNode>['parse']> = null;
  try {
    article = new Readability<DomNode>(document as never, { serializer: (node) => node as unknown as DomNode }).parse();
  } catch {
    article = null;
  }
  const content = article?.content;
  if (content && normalizeText(content.textContent ?? '')) {
    const sections = new DomSections(topHeadings).walk(content).finish();
    const title = collapseSpaces(article?.title ?? '') || firstHeading(sections);
    return { title: title || undefined, sections };
  }
  const page = parseDocument(html);
  const title = collapseSpaces(page.title ?? '');
  removeFurniture(page);
  const sections = new DomSections().walk(page.body ?? page).finish();
  return { title: title || firstHeading(sections), sections };
}
