import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Browser, Page } from 'playwright-core';
import { REALTIME_CLOSE, RealtimeServerMessage } from '@parley/contracts';
import { parseWav } from '@parley/audio';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';
import { launchChromium } from './support/chromium';
import { RealtimeTestClient } from './support/realtime-client';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const KEY = 'vsk_rendezvous_owner_key_01';
const OTHER_KEY = 'vsk_rendezvous_other_key_01';
const RING_SECONDS = 3;
const DOCTOR_SAYS = 'Good morning doctor speaking';
const PATIENT_SAYS = 'Hello I have a question';

/**
 * Where a recording is loud: stretches (start and end, in seconds) whose 50 ms windows are above a tenth of the
 * loudest one, pauses shorter than 700 ms (between words) bridged.
 */
function loudStretches(wav: Buffer): { start: number; end: number }[] {
  const { samples, sampleRate } = parseWav(wav);
  const window = Math.round(sampleRate / 20);
  const levels: number[] = [];
  for (let at = 0; at + window <= samples.length; at += window) {
    let squares = 0;
    for (let i = at; i < at + window; i++) squares += samples[i] * samples[i];
    levels.push(Math.sqrt(squares / window));
  }
  const threshold = Math.max(...levels) / 10;
  const stretches: { start: number; end: number }[] = [];
  levels.forEach((level, i) => {
    if (level < threshold) return;
    const last = stretches.at(-1);
    if (last && i * 0.05 - last.end < 0.7) last.end = (i + 1) * 0.05;
    else stretches.push({ start: i * 0.05, end: (i + 1) * 0.05 });
  });
  return stretches;
}

interface Minted {
  token: string;
  url: string;
  call_id: string;
  role: string;
  seat: string;
}

const signals = (client: RealtimeTestClient) => client.received.flatMap((m) => (m.type === 'signal' ? [m.data] : []));
const peers = (client: RealtimeTestClient) => client.received.filter((m): m is Extract<RealtimeServerMessage, { type: 'peer' }> => m.type === 'peer');

describe('rendezvous: two people in browsers through a webrtc agent (standalone)', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let other: ApiClient;
  const hooks = new WebhookReceiver();
  // The recognizer of an agent that transcribes its rendezvous, speaking Deepgram's protocol.
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  let agentId: string;

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`, `globex:owner:${OTHER_KEY}`],
      env: { WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1', EGRESS_ALLOWLIST: '127.0.0.1', DEEPGRAM_API_KEY: 'dg-key', DEEPGRAM_BASE_URL: await deepgram.start() },
    });
    api = platform.api(KEY);
    other = platform.api(OTHER_KEY);
    await api.post('/v1/webhook_endpoints', { url: await hooks.start(), events: ['call.started', 'call.ended'] });
    const agent = await api.post('/v1/agents', {
      name: 'Consultation room',
      mode: 'webrtc',
      ring_seconds: RING_SECONDS,
      languages: [{ code: 'en-US', greeting: 'Never spoken in a rendezvous.' }],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await hooks.stop();
    await deepgram.stop();
  });

  const rendezvous = async (body: Record<string, unknown> = {}): Promise<{ id: string; status: string; direction: string; carrier: string; seats: { name: string; taken: boolean }[] }> => {
    const res = await api.post('/v1/calls/rendezvous', { agent_id: agentId, ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; status: string; direction: string; carrier: string; seats: { name: string; taken: boolean }[] };
  };
  const seat = async (callId: string, name: string): Promise<Minted> => {
    const res = await api.post(`/v1/calls/${callId}/seat`, { seat: name });
    expect(res.status).toBe(201);
    return res.body as Minted;
  };
  const join = async (minted: Minted) => {
    const client = new RealtimeTestClient(minted.url);
    await client.start(minted.token, minted.call_id);
    await until(() => client.received.find((m) => m.type === 'call-start'), `seat ${minted.seat} accepted`);
    return client;
  };

  describe('over the realtime socket (Node clients)', () => {
    it('seats both ends, relays their signals both ways in order, tells each of the other; one hangs up and both get call-end completed, with the webhooks', async () => {
      const call = await rendezvous({ seats: ['host', 'guest'], metadata: { room: 'r1' } });
      expect(call).toMatchObject({ status: 'queued', direction: 'web', carrier: 'web', seats: [{ name: 'host', taken: false }, { name: 'guest', taken: false }] });

      const hostSeat = await seat(call.id, 'host');
      expect(hostSeat).toMatchObject({ object: 'realtime_token', role: 'seat', seat: 'host', url: `${platform.mediaUrl}/realtime` });
      const host = await join(hostSeat);
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ringing', seats: [{ name: 'host', taken: true }, { name: 'guest', taken: false }] });
      expect((await api.post(`/v1/calls/${call.id}/seat`, { seat: 'host' })).status).toBe(409);

      const guest = await join(await seat(call.id, 'guest'));
      await until(() => peers(host).length && peers(guest).length, 'both told of the other');
      expect(peers(host)).toEqual([{ type: 'peer', state: 'joined', seat: 'guest' }]);
      expect(peers(guest)).toEqual([{ type: 'peer', state: 'joined', seat: 'host', offer: true }]);
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'in_progress', seats: [{ taken: true }, { taken: true }] });
      expect((await hooks.next('call.started', call.id)).data).toMatchObject({ agent_id: agentId, direction: 'web' });

      const offer = { sdp: { type: 'offer', sdp: 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n' } };
      const guestCandidates = [1, 2, 3].map((i) => ({ candidate: { candidate: `candidate:${i} 1 udp 2122260223 192.0.2.2 5000${i} typ host`, sdpMid: '0' } }));
      const answer = { sdp: { type: 'answer', sdp: 'v=0\r\no=- 3 4 IN IP4 127.0.0.1\r\n' } };
      const hostCandidates = [{ candidate: { candidate: 'candidate:7 1 udp 2122260223 192.0.2.2 50007 typ host', sdpMid: '0' } }, { candidate: null }];
      for (const data of [offer, ...guestCandidates]) guest.send({ type: 'signal', data });
      for (const data of [answer, ...hostCandidates]) host.send({ type: 'signal', data });
      await until(() => signals(host).length === 4 && signals(guest).length === 3, 'the signals relayed');
      expect(signals(host)).toEqual([offer, ...guestCandidates]);
      expect(signals(guest)).toEqual([answer, ...hostCandidates]);
      // No audio travels on the socket in this mode, and nobody speaks a greeting.
      expect([...host.received, ...guest.received].some((m) => m.type === 'audio' || m.type === 'transcript')).toBe(false);

      guest.send({ type: 'hangup' });
      expect(await guest.closed).toEqual({ code: 1000, reason: 'stream stopped' });
      expect(guest.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
      expect(await host.closed).toEqual({ code: 1000, reason: 'call ended: completed' });
      expect(host.received.slice(-2)).toEqual([
        { type: 'peer', state: 'left', seat: 'guest' },
        { type: 'call-end', reason: 'completed' },
      ]);
      expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'completed' });
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed', metadata: { room: 'r1' } });
    }, 60_000);

    it(`ends the call no_answer when the second seat never joins, at ring_seconds (${RING_SECONDS} s) ± 1 s`, async () => {
      const call = await rendezvous();
      const first = await join(await seat(call.id, 'a'));
      const seatedAt = Date.now();
      const closed = await first.closed;
      const waited = Date.now() - seatedAt;
      expect(waited).toBeGreaterThanOrEqual(RING_SECONDS * 1000 - 1000);
      expect(waited).toBeLessThanOrEqual(RING_SECONDS * 1000 + 1000);
      expect(closed).toEqual({ code: 1000, reason: 'call ended: no_answer' });
      expect(first.received.at(-1)).toEqual({ type: 'call-end', reason: 'no_answer' });
      expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'no_answer' });
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
      // The seat left open cannot be taken any more.
      expect((await api.post(`/v1/calls/${call.id}/seat`, { seat: 'b' })).status).toBe(409);
    }, 30_000);

    it('gives up a ringing rendezvous (POST give-up): the waiting seat gets call-end no_answer', async () => {
      const call = await rendezvous();
      const first = await join(await seat(call.id, 'a'));
      const given = await api.post(`/v1/calls/${call.id}/give-up`);
      expect(given.body).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
      expect(await first.closed).toMatchObject({ code: 1000 });
      expect(first.received.at(-1)).toEqual({ type: 'call-end', reason: 'no_answer' });
    }, 30_000);

    it('refuses what it must: a non-webrtc agent (422 agent_id), bad seats (422), another account’s call (404), a call that is not a rendezvous (409), a used seat token (4409)', async () => {
      const talk = await api.post('/v1/agents', { name: 'Talker', languages: [{ code: 'en-US', greeting: 'Hi.' }] });
      const wrong = await api.post('/v1/calls/rendezvous', { agent_id: talk.body.id });
      expect(wrong.status).toBe(422);
      expect(JSON.stringify(wrong.body)).toContain('agent_id');
      expect((await api.post('/v1/calls/rendezvous', { agent_id: agentId, seats: ['a', 'a'] })).status).toBe(422);
      expect((await api.post('/v1/calls/rendezvous', { agent_id: agentId, seats: ['a', 'B!'] })).status).toBe(422);

      const call = await rendezvous();
      expect((await other.post(`/v1/calls/${call.id}/seat`, { seat: 'a' })).status).toBe(404);
      expect((await api.post(`/v1/calls/${call.id}/seat`, { seat: 'z' })).status).toBe(422);
      const web = await api.post('/v1/realtime/tokens', { agent_id: talk.body.id });
      expect((await api.post(`/v1/calls/${web.body.call_id}/seat`, { seat: 'a' })).status).toBe(409);

      const minted = await seat(call.id, 'a');
      const first = await join(minted);
      const again = new RealtimeTestClient(minted.url);
      await again.start(minted.token, minted.call_id);
      expect(await again.closed).toEqual({ code: REALTIME_CLOSE.tokenUsed, reason: expect.stringMatching(/^token_used: /) });
      first.send({ type: 'hangup' });
      await first.closed;
      expect(first.received.at(-1)).toEqual({ type: 'call-end', reason: 'canceled' });
      // The only seat leaving before the other came cancels the call.
      await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.status === 'ended', 'the call ended');
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ end_reason: 'canceled' });
    }, 30_000);
  });

  describe('in real browsers (two headless Chromiums, each its own fake microphone)', () => {
    let site: Server;
    let siteUrl: string;
    const browsers: Browser[] = [];

    /** The customer's page: `window.takeSeat(callId, seat)` asks the customer's server for the seat's token and joins. */
    const page = (baseUrl: string) => `<!doctype html><html><head><meta charset="utf-8"><script src="${baseUrl}/v1/embed/"></script></head><body><script>
      window.seen = { events: [], peers: [], remotePeak: 0, remoteLoudMs: 0, micPeak: 0, micOnsets: [], micLoudAt: 0, ends: [], errors: [] };
      window.takeSeat = async (callId, seat) => {
        const minted = await (await fetch('/seat', { method: 'POST', body: JSON.stringify({ call_id: callId, seat }) })).json();
        const call = new Parley.ParleyCall({ url: minted.url, token: minted.token, callId });
        window.call = call;
        call.on('call-start', () => window.seen.events.push('call-start'));
        call.on('peer', (p) => window.seen.peers.push(p.state + ' ' + p.seat));
        call.on('error', (e) => window.seen.errors.push(e.code + ': ' + e.message));
        call.on('volume', (v) => {
          window.seen.remotePeak = Math.max(window.seen.remotePeak, v.remote);
          window.seen.micPeak = Math.max(window.seen.micPeak, v.microphone);
          if (v.microphone > 0.02) {
            if (Date.now() - window.seen.micLoudAt > 1000) window.seen.micOnsets.push(Date.now());
            window.seen.micLoudAt = Date.now();
          }
          if (v.remote > 0.02) window.seen.remoteLoudMs += 100;
        });
        call.on('call-end', (e) => window.seen.ends.push(e.reason));
        await call.start();
      };
    </script></body></html>`;

    type Seen = {
      events: string[];
      peers: string[];
      remotePeak: number;
      remoteLoudMs: number;
      micPeak: number;
      /** When (epoch ms) the microphone became loud after a second of quiet: when the person started speaking. */
      micOnsets: number[];
      ends: string[];
      errors: string[];
    };
    const seen = (p: Page) => p.evaluate(() => (globalThis as unknown as { seen: Seen }).seen);
    const takeSeat = (p: Page, callId: string, name: string) =>
      p.evaluate(([id, s]) => (globalThis as unknown as { takeSeat(id: string, s: string): Promise<void> }).takeSeat(id, s), [callId, name] as const);

    beforeAll(async () => {
      const html = page(platform.baseUrl);
      site = createServer((req, res) => {
        if (req.method === 'POST' && req.url === '/seat') {
          let body = '';
          req.on('data', (c) => (body += c));
          req.on('end', async () => {
            const { call_id, seat: name } = JSON.parse(body) as { call_id: string; seat: string };
            const minted = await api.post(`/v1/calls/${call_id}/seat`, { seat: name });
            res.writeHead(minted.status, { 'content-type': 'application/json' }).end(JSON.stringify(minted.body));
          });
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
      });
      await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
      siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
      browsers.push(await launchChromium('Good morning, this is the doctor speaking.'), await launchChromium('Hello doctor, I have a question about my visa.'));
    }, 60_000);

    afterAll(async () => {
      for (const b of browsers) await b.close();
      await new Promise((r) => site?.close(r));
    });

    it('each page hears the other over the peer connection the server signalled; hanging up ends it completed', async () => {
      const call = await rendezvous({ seats: ['doctor', 'patient'] });
      const [doctor, patient] = await Promise.all(browsers.map((b) => b.newPage()));
      try {
        await Promise.all([doctor.goto(siteUrl), patient.goto(siteUrl)]);
        await takeSeat(doctor, call.id, 'doctor');
        await takeSeat(patient, call.id, 'patient');
        // The fake microphones loop 4 s of silence, the phrase, 8 s of silence: within a loop each hears the other speak.
        for (const [p, who] of [
          [doctor, 'the doctor hears the patient'],
          [patient, 'the patient hears the doctor'],
        ] as const) {
          await until(async () => (await seen(p)).remoteLoudMs >= 500, who, 40_000);
        }
        expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'in_progress' });

        await doctor.evaluate(() => (globalThis as unknown as { call: { hangup(): void } }).call.hangup());
        await until(async () => (await seen(patient)).ends.length > 0, 'the patient’s call-end');
        const [d, p] = [await seen(doctor), await seen(patient)];
        expect(d.ends).toEqual(['completed']);
        expect(p.ends).toEqual(['completed']);
        expect(d.peers).toEqual(['joined patient']);
        expect(p.peers).toEqual(['joined doctor', 'left doctor']);
        expect([...d.errors, ...p.errors]).toEqual([]);
        expect(Math.min(d.remotePeak, p.remotePeak)).toBeGreaterThan(0.02);
        expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'completed' });
      } finally {
        await doctor.close();
        await patient.close();
      }
    }, 90_000);

    it(`ends the call no_answer when the other page never takes its seat, at ring_seconds (${RING_SECONDS} s) ± 1 s`, async () => {
      const call = await rendezvous();
      const alone = await browsers[0].newPage();
      try {
        await alone.goto(siteUrl);
        await takeSeat(alone, call.id, 'a');
        const seatedAt = Date.now();
        await until(async () => (await seen(alone)).ends.length > 0, 'the ring to run out', 10_000);
        const waited = Date.now() - seatedAt;
        expect(waited).toBeGreaterThanOrEqual(RING_SECONDS * 1000 - 1000);
        expect(waited).toBeLessThanOrEqual(RING_SECONDS * 1000 + 1000);
        expect((await seen(alone)).ends).toEqual(['no_answer']);
        expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
      } finally {
        await alone.close();
      }
    }, 30_000);

    describe('with copies for records (record_calls, transcribe_calls)', () => {
      let recordedAgentId: string;

      beforeAll(async () => {
        const agent = await api.post('/v1/agents', {
          name: 'Recorded consultation',
          mode: 'webrtc',
          ring_seconds: 30,
          record_calls: true,
          transcribe_calls: true,
          languages: [{ code: 'en-US', stt_provider: 'deepgram' }],
        });
        expect(agent.status).toBe(201);
        recordedAgentId = agent.body.id;
      });

      it('each page hears the other; the recording has both voices on one timeline, and the transcript both seats as speakers', async () => {
        // Chromium's fake microphone plays from the browser's start: launched together, right before the seats are
        // taken, the doctor speaks about 5 s in and the patient 5 s later, both after the seats met, never together.
        const voices = await Promise.all([launchChromium(DOCTOR_SAYS, 5), launchChromium(PATIENT_SAYS, 10)]);
        // A phrase eSpeak pauses in may make two segments: the patient's text is there for the doctor's second one.
        deepgram.utterances(DOCTOR_SAYS, PATIENT_SAYS, PATIENT_SAYS, PATIENT_SAYS);
        try {
          const call = await rendezvous({ agent_id: recordedAgentId, seats: ['doctor', 'patient'] });
          const [doctor, patient] = await Promise.all(voices.map((b) => b.newPage()));
          await Promise.all([doctor.goto(siteUrl), patient.goto(siteUrl)]);
          await takeSeat(doctor, call.id, 'doctor');
          await takeSeat(patient, call.id, 'patient');
          await until(async () => (await seen(patient)).remoteLoudMs >= 500, 'the patient hears the doctor', 30_000);
          await until(async () => (await seen(doctor)).remoteLoudMs >= 500, 'the doctor hears the patient', 30_000);

          type Turn = { role: string; text: string; speaker: string | null; start_seconds: number };
          const turns = async () => ((await api.get(`/v1/calls/${call.id}/transcript`)).body as { turns: Turn[] }).turns;
          await until(async () => new Set((await turns()).map((t) => t.speaker)).size === 2, 'both seats transcribed', 30_000);
          await doctor.evaluate(() => (globalThis as unknown as { call: { hangup(): void } }).call.hangup());
          await until(async () => (await seen(patient)).ends.length > 0, 'the patient’s call-end');
          const [d, p] = [await seen(doctor), await seen(patient)];
          expect([...d.errors, ...p.errors]).toEqual([]);

          const said = await turns();
          const first = (speaker: string) => said.find((t) => t.speaker === speaker);
          expect(said.every((t) => t.role === 'user')).toBe(true);
          expect(first('doctor')?.text).toBe(DOCTOR_SAYS);
          expect(first('patient')?.text).toBe(PATIENT_SAYS);

          await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.recording_available === true, 'the recording', 20_000);
          const file = await fetch(`${platform.baseUrl}/v1/calls/${call.id}/recording`, { headers: { authorization: `Bearer ${KEY}` } });
          expect(file.status).toBe(200);
          const [doctorSpoke, patientSpoke] = loudStretches(Buffer.from(await file.arrayBuffer()));
          // One timeline: the voices are as far apart in the recording as the two people started speaking (their
          // pages' microphones, on one clock), and where the transcript of each seat says they spoke.
          const apart = (p.micOnsets[0] - d.micOnsets[0]) / 1000;
          expect(apart).toBeGreaterThan(3);
          expect(patientSpoke.start - doctorSpoke.start).toBeGreaterThan(apart - 0.75);
          expect(patientSpoke.start - doctorSpoke.start).toBeLessThan(apart + 0.75);
          expect(patientSpoke.start - doctorSpoke.end).toBeGreaterThan(1);
          expect(Math.abs((first('doctor')?.start_seconds ?? NaN) - doctorSpoke.start)).toBeLessThan(1);
          expect(Math.abs((first('patient')?.start_seconds ?? NaN) - patientSpoke.start)).toBeLessThan(1);
          // The record says both clients sent their copies.
          await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.seats.every((s: { copy: boolean | null }) => s.copy !== null), 'the seats’ copies reported');
          expect((await api.get(`/v1/calls/${call.id}`)).body.seats).toEqual([
            { name: 'doctor', taken: true, copy: true },
            { name: 'patient', taken: true, copy: true },
          ]);
        } finally {
          for (const b of voices) await b.close();
        }
      }, 120_000);
    });
  });
});
