import { framesInTally, mediaFramesIn } from './media-metrics';

describe('media metrics', () => {
  const framesIn = async (carrier: string) => (await mediaFramesIn.get()).values.find((v) => v.labels['carrier'] === carrier)?.value ?? 0;

  it('adds the frames streams counted to parley_media_frames_in_total when it is read, each frame once', async () => {
    const before = await framesIn('twilio');
    const stream = framesInTally('twilio');
    const other = framesInTally('twilio');
    stream.frames += 3;
    other.frames++;
    framesInTally('realtime').frames += 2;

    expect(await framesIn('twilio')).toBe(before + 4);
    expect(await framesIn('twilio')).toBe(before + 4);
    expect(await framesIn('realtime')).toBe(2);
  });
});
