import { ExtractedSection } from './types';

/** LF line ends, no NULs or other control characters but tabs and newlines, no trailing spaces, at most one blank line. */
export function normalizeText(text: string): string {
  return text
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, '')
    .replace(/[ \t\u00A0]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Inline whitespace collapsed to single spaces. */
export function collapseSpaces(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** A section builder: paragraphs collected under the current heading path; empty sections are left out. */
export class SectionCollector {
  readonly sections: ExtractedSection[] = [];
  private headings: string[] = [];
  private levels: number[] = [];
  private paragraphs: string[] = [];

  /** Starts a section under a heading of `level` (1 = outermost), keeping the path of the headings above it. */
  heading(level: number, text: string): void {
    this.flush();
    while (this.levels.length > 0 && this.levels[this.levels.length - 1] >= level) {
      this.levels.pop();
      this.headings.pop();
    }
    this.levels.push(level);
    this.headings.push(text);
  }

  paragraph(text: string): void {
    const normalized = normalizeText(text);
    if (normalized) this.paragraphs.push(normalized);
  }

  /** The sections so far (the open one included). */
  finish(): ExtractedSection[] {
    this.flush();
    return this.sections;
  }

  private flush(): void {
    if (this.paragraphs.length > 0) {
      this.sections.push({ headings: [...this.headings], text: this.paragraphs.join('\n\n') });
    }
    this.paragraphs = [];
  }
}
