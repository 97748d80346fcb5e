/**
 * Splits a model's streamed text into sentences as soon as each is complete, so speech synthesis starts on the
 * first sentence while the model is still writing the rest. Short fragments are held back and joined to the
 * next one (a voice reading "Sure." alone sounds clipped).
 */
export class SentenceChunker {
  private buffer = '';

  constructor(private readonly minChars = 12) {}

  /** Adds streamed text; returns the sentences it completed. */
  push(delta: string): string[] {
    this.buffer += delta;
    const out: string[] = [];
    const boundary = /[.!?…。！？;:]+["')\]]*\s+/g;
    let start = 0;
    let match: RegExpExecArray | null;
    while ((match = boundary.exec(this.buffer))) {
      const end = match.index + match[0].length;
      const sentence = this.buffer.slice(start, end).trim();
      if (sentence.length >= this.minChars) {
        out.push(sentence);
        start = end;
      }
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Whatever is left once the stream ends. */
  flush(): string | undefined {
    const rest = this.buffer.trim();
    this.buffer = '';
    return rest || undefined;
  }
}
