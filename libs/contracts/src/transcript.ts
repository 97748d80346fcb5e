/**
 * One turn of a call's transcript as the voice engine produces it and the calls service stores it (times in ms
 * from the start of the media stream). The wire form between them is callsV1.Turn.
 */
export interface TranscriptTurn {
  role: 'user' | 'assistant';
  text: string;
  language: string;
  startMs: number;
  endMs: number;
  /** The caller talked over it: `text` is what was heard. */
  interrupted: boolean;
}
