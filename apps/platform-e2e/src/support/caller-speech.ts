import { FakeMediaStream } from '@parley/carrier-twilio';
import { callerSpeechMulaw, silenceMulaw } from '@parley/speech';

/** The caller says `text` in real time on the Twilio stream, then the line carries silence while the turn ends. */
export async function say(media: FakeMediaStream, text: string): Promise<void> {
  await media.sendAudio(Buffer.concat([callerSpeechMulaw(text), silenceMulaw(1200)]), { paced: true });
}
