import { FakeSpeechToText, SpeechError, SttEvent } from '@parley/speech';
import { FallbackSpeechToText } from './stt-fallback';

const options = { language: 'en-US', sampleRate: 8000 };

describe('FallbackSpeechToText', () => {
  it('opens the next provider when the first cannot be opened', async () => {
    const first = new FakeSpeechToText({ name: 'first' }).failNextOpen();
    const spare = new FakeSpeechToText({ name: 'spare' });
    const events: SttEvent[] = [];
    const stream = await new FallbackSpeechToText([first, spare]).open(options, { onTranscript: (e) => void events.push(e), onError: () => undefined });
    stream.write(new Int16Array(160));
    spare.emit({ type: 'partial', text: 'hello' });
    expect(spare.streams[0].samples).toBe(160);
    expect(events).toEqual([{ type: 'partial', text: 'hello' }]);
  });

  it('replaces a stream that fails by the next provider’s: the writer keeps its stream, the failed one is heard no more', async () => {
    const first = new FakeSpeechToText({ name: 'first' });
    const spare = new FakeSpeechToText({ name: 'spare' });
    const events: SttEvent[] = [];
    const errors: SpeechError[] = [];
    const stream = await new FallbackSpeechToText([first, spare]).open(options, { onTranscript: (e) => void events.push(e), onError: (e) => void errors.push(e) });
    first.failStream();
    await new Promise((r) => setImmediate(r));
    stream.write(new Int16Array(160));
    spare.emit({ type: 'final', text: 'still here', endOfTurn: true });
    expect(spare.streams[0].samples).toBe(160);
    expect(events).toEqual([{ type: 'final', text: 'still here', endOfTurn: true }]);
    expect(errors).toEqual([]);
  });

  it('rejects when no provider opens, and reports a failure with no provider left', async () => {
    const down = new FakeSpeechToText({ name: 'down' }).failNextOpen();
    await expect(new FallbackSpeechToText([down]).open(options, { onTranscript: () => undefined, onError: () => undefined })).rejects.toThrow('connection refused');

    const only = new FakeSpeechToText({ name: 'only' });
    const errors: SpeechError[] = [];
    await new FallbackSpeechToText([only]).open(options, { onTranscript: () => undefined, onError: (e) => void errors.push(e) });
    only.failStream();
    await new Promise((r) => setImmediate(r));
    expect(errors.map((e) => e.message)).toEqual(['only: connection lost']);
  });
});
