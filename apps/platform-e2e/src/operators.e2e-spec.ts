import { Browser, BrowserContext, Page } from 'playwright-core';
import { mulawToPcm16 } from '@parley/audio';
import { FakeMediaStream, FakeTwilioServer } from '@parley/carrier-twilio';
import { RealtimeTokenClaims, REALTIME_SAMPLE_RATE } from '@parley/contracts';
import { SignedTokens } from '@parley/persistence';
import { ApiClient, EventStreamClient, RunningPlatform } from '@parley/testing';
import { launchChromium } from './support/chromium';
import { loudestFrame, peakOf, realtimeAudio, sendRealtimeTone, toneMulaw, toneRatio } from './support/phone-audio';
import { RealtimeTestClient } from './support/realtime-client';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const KEY = 'vsk_operators_owner_key_0001';
const OTHER_KEY = 'vsk_operators_other_key_0001';
const SECRET_KEY = 'e2e-operators-secret-key-000000000000001';
const NUMBER = '+15550009999';
const RING_SECONDS = 2;
const GREETING = 'This greeting is never spoken: a person answers.';

interface Minted {
  token: string;
  url: string;
  call_id: string;
  role: string;
  operator: string;
  expires_at: string;
  session_expires_at: string;
  call: { id: string; status: string; claimed_by: string };
}

describe('operators: ringing calls claimed by people (standalone, Twilio protocol)', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let api: ApiClient;
  let other: ApiClient;
  const hooks = new WebhookReceiver();
  let frontDesk: string;
  let quickRing: string;
  let callers = 0;

  beforeAll(async () => {
    twilio = new FakeTwilioServer();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`, `globex:owner:${OTHER_KEY}`],
      env: {
        SECRET_KEY,
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        EGRESS_ALLOWLIST: '127.0.0.1',
        ...(await twilio.platformEnv(NUMBER)),
      },
    });
    api = platform.api(KEY);
    other = platform.api(OTHER_KEY);
    await api.post('/v1/webhook_endpoints', { url: await hooks.start(), events: ['call.started', 'call.ended'] });
    const agent = (body: Record<string, unknown>) => api.post('/v1/agents', { autonomy: 'simple', languages: [{ code: 'en-US', greeting: GREETING }], ...body });
    frontDesk = (await agent({ name: 'Front desk', ring_seconds: 30 })).body.id;
    quickRing = (await agent({ name: 'Quick ring', ring_seconds: RING_SECONDS })).body.id;
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
    await hooks.stop();
  });

  const consoleToken = async (operator: string): Promise<Minted> => {
    const minted = await api.post('/v1/realtime/tokens', { role: 'console', operator, ttl_seconds: 900 });
    expect(minted.status).toBe(201);
    return minted.body as Minted;
  };
  const as = (token: string) => new ApiClient(platform.baseUrl, token);

  /** A phone call in: Twilio's voice webhook, then the caller's media stream (the caller is on the line). */
  const ringIn = async (agentId: string, options: { stream?: boolean } = {}) => {
    const from = `+1555017${String(++callers).padStart(4, '0')}`;
    const inbound = await twilio.placeInboundCall({
      voiceUrl: `${platform.baseUrl}/carriers/twilio/voice/${agentId}`,
      from,
      to: NUMBER,
      statusCallbackUrl: `${platform.baseUrl}/carriers/twilio/status`,
    });
    expect(inbound.status).toBe(200);
    const call = (await api.get('/v1/calls?direction=inbound')).body.data.find((c: { from: string }) => c.from === from) as { id: string; from: string };
    const caller = options.stream === false ? undefined : await twilio.connectMediaStream(inbound.sid);
    return { call, caller: caller as FakeMediaStream, from };
  };

  const join = async (minted: Minted) => {
    const operator = new RealtimeTestClient(minted.url);
    await operator.start(minted.token, minted.call_id);
    await until(() => operator.received.some((m) => m.type === 'call-start'), 'the operator on the call', 10_000);
    return operator;
  };
  const ended = (callId: string) =>
    until(async () => {
      const call = (await api.get(`/v1/calls/${callId}`)).body;
      return call.status === 'ended' ? call : undefined;
    }, `${callId} to end`, 15_000);

  it('is announced by npm start with the console page’s address', () => {
    expect(platform.output('standalone')).toContain(`Operator console: ${platform.baseUrl}/operator `);
  });

  describe('over the Twilio protocol and the realtime socket', () => {
    it('rings the caller (ringback, no greeting), shows the call on two consoles, lets exactly one of two simultaneous claims win, carries audio both ways and ends on the operator’s hang-up', async () => {
      const [alice, bob] = await Promise.all([consoleToken('alice'), consoleToken('bob')]);
      const streams = await Promise.all([alice, bob].map((t) => EventStreamClient.open(`${platform.baseUrl}/v1/calls/ringing`, t.token)));
      try {
        const { call, caller, from } = await ringIn(frontDesk);

        // Ringback: 440 + 480 Hz for the first 2 s of its cadence, and nothing an agent says.
        await until(() => caller.receivedFrames >= 50, 'a second of ringback', 10_000);
        const ring = mulawToPcm16(caller.receivedAudio().subarray(0, 50 * 160));
        expect(loudestFrame(caller.receivedAudio()).rms).toBeGreaterThan(1000);
        expect(toneRatio(ring, 440, 8000)).toBeGreaterThan(100);
        expect(toneRatio(ring, 480, 8000)).toBeGreaterThan(100);
        expect(caller.received.some((m) => m.event === 'mark')).toBe(false);
        expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ringing', claimable: true, claimed_by: null, answered_at: null });

        const announced = await Promise.all(streams.map((s) => s.waitFor((e) => e.event === 'ringing' && e.data.id === call.id)));
        for (const a of announced) expect(a.data).toMatchObject({ from, to: NUMBER, agent_id: frontDesk, status: 'ringing', claimable: true });

        // Both consoles claim at the same moment: one 201 with an operator token, one 409 conflict.
        const claims = await Promise.all([alice, bob].map((t) => as(t.token).post(`/v1/calls/${call.id}/claim`, {})));
        expect(claims.map((c) => c.status).sort()).toEqual([201, 409]);
        const loser = claims.find((c) => c.status === 409);
        expect(loser?.headers.get('content-type')).toMatch(/application\/problem\+json/);
        expect(loser?.body).toMatchObject({ code: 'conflict', status: 409 });
        const won = claims.find((c) => c.status === 201)?.body as Minted;
        const winner = won.call.claimed_by;
        expect(['alice', 'bob']).toContain(winner);
        expect(won).toMatchObject({ object: 'realtime_token', role: 'operator', call_id: call.id, url: `${platform.mediaUrl}/realtime`, call: { status: 'in_progress' } });
        for (const s of streams) {
          const gone = await s.waitFor((e) => e.event === 'gone' && e.data.call_id === call.id);
          expect(gone.data).toMatchObject({ reason: 'claimed', call: { claimed_by: winner, status: 'in_progress' } });
        }
        expect((await hooks.next('call.started', call.id)).data).toMatchObject({ direction: 'inbound', from });

        const operator = await join(won);
        // The operator is on: ringback stops. Whatever the caller hears from here on is the operator.
        await new Promise((r) => setTimeout(r, 300));
        const quietFrom = caller.receivedFrames;

        // The caller's 300 Hz tone reaches the operator's socket, at 16 kHz, within a second.
        const heardFrom = operator.received.length;
        const sentAt = Date.now();
        const sending = caller.sendAudio(toneMulaw(300, 1), { paced: true });
        await until(() => peakOf(realtimeAudio(operator.received, heardFrom)) > 4000, 'the caller’s tone at the operator', 5_000);
        expect(Date.now() - sentAt).toBeLessThan(1_000);
        await sending;
        await until(() => realtimeAudio(operator.received, heardFrom).length >= REALTIME_SAMPLE_RATE * 0.8, 'most of the tone', 5_000);
        expect(toneRatio(realtimeAudio(operator.received, heardFrom), 300, REALTIME_SAMPLE_RATE)).toBeGreaterThan(100);

        // The operator's 600 Hz tone reaches the caller (8 kHz μ-law), within a second.
        expect(loudestFrame(caller.receivedAudio().subarray(quietFrom * 160)).rms).toBeLessThan(100);
        const speakingAt = Date.now();
        const speaking = sendRealtimeTone(operator, 600, 1);
        await until(() => loudestFrame(caller.receivedAudio().subarray(quietFrom * 160)).rms > 1000, 'the operator’s tone at the caller', 5_000);
        expect(Date.now() - speakingAt).toBeLessThan(1_000);
        await speaking;
        await until(() => caller.receivedFrames - quietFrom >= 40, 'most of the operator’s tone', 5_000);
        expect(toneRatio(mulawToPcm16(caller.receivedAudio().subarray(quietFrom * 160)), 600, 8000)).toBeGreaterThan(100);

        operator.send({ type: 'hangup' });
        expect((await operator.closed).code).toBe(1000);
        await caller.closed;
        const record = await ended(call.id);
        expect(record).toMatchObject({ end_reason: 'completed', claimed_by: winner });
        expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'completed' });
        // Nobody but the two people spoke: no greeting, no agent turn.
        const transcript = (await api.get(`/v1/calls/${call.id}/transcript`)).body;
        expect(JSON.stringify(transcript)).not.toContain(GREETING);
      } finally {
        for (const s of streams) s.close();
      }
    }, 60_000);

    it('ends the operator’s socket when the caller hangs up', async () => {
      const { call, caller } = await ringIn(frontDesk);
      await until(async () => (await api.get('/v1/calls/ringing')).body.data.some((c: { id: string }) => c.id === call.id), 'the call ringing', 10_000);
      const claimed = await api.post(`/v1/calls/${call.id}/claim`, { operator: 'carol' });
      expect(claimed.status).toBe(201);
      const operator = await join(claimed.body as Minted);
      await caller.stop();
      const closed = await operator.closed;
      expect(closed.code).toBe(1000);
      expect(operator.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
      expect(await ended(call.id)).toMatchObject({ end_reason: 'completed', claimed_by: 'carol' });
      expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'completed' });
    }, 30_000);

    it('rings a web call to a simple agent for a person: the visitor hears ringback, then the operator who claimed it, and hangs up', async () => {
      const minted = (await api.post('/v1/realtime/tokens', { agent_id: frontDesk })).body as Minted;
      const visitor = new RealtimeTestClient(minted.url);
      await visitor.start(minted.token, minted.call_id);
      const peakFrom = (client: RealtimeTestClient, from: number) => {
        let peak = 0;
        for (const m of client.received.slice(from)) {
          if (m.type !== 'audio') continue;
          const pcm = Buffer.from(m.audio, 'base64');
          for (let i = 0; i + 1 < pcm.length; i += 2) peak = Math.max(peak, Math.abs(pcm.readInt16LE(i)));
        }
        return peak;
      };
      await until(() => peakFrom(visitor, 0) > 1000, 'ringback at the visitor', 10_000);
      await until(async () => (await api.get('/v1/calls/ringing')).body.data.some((c: { id: string }) => c.id === minted.call_id), 'the web call ringing', 10_000);

      const claimed = await api.post(`/v1/calls/${minted.call_id}/claim`, { operator: 'erin' });
      expect(claimed.status).toBe(201);
      const operator = await join(claimed.body as Minted);
      // What the ring had queued plays out within 160 ms; after that the visitor hears only the operator.
      await new Promise((r) => setTimeout(r, 300));
      const heardFrom = visitor.received.length;
      expect(peakFrom(visitor, heardFrom)).toBe(0);
      await operator.speak('Front desk, how can I help?');
      await until(() => peakFrom(visitor, heardFrom) > 1000, 'the operator’s voice at the visitor', 10_000);
      await visitor.speak('I have a question.');
      await until(() => operator.agentPeak > 1000, 'the visitor’s voice at the operator', 10_000);

      visitor.send({ type: 'hangup' });
      expect((await operator.closed).code).toBe(1000);
      expect(await ended(minted.call_id)).toMatchObject({ direction: 'web', end_reason: 'completed', claimed_by: 'erin' });
    }, 30_000);

    it(`ends a call nobody claims no_answer at ring_seconds (${RING_SECONDS} s) ± 1 s, and says it is gone`, async () => {
      const watcher = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/ringing`, (await consoleToken('dave')).token);
      try {
        const { call, caller } = await ringIn(quickRing);
        const attachedAt = Date.now();
        await caller.closed;
        const rang = Date.now() - attachedAt;
        expect(rang).toBeGreaterThanOrEqual(RING_SECONDS * 1000 - 1000);
        expect(rang).toBeLessThanOrEqual(RING_SECONDS * 1000 + 1000);
        expect(await ended(call.id)).toMatchObject({ end_reason: 'no_answer', claimed_by: null });
        expect((await hooks.next('call.ended', call.id)).data).toMatchObject({ end_reason: 'no_answer' });
        expect((await watcher.waitFor((e) => e.event === 'gone' && e.data.call_id === call.id)).data).toMatchObject({ reason: 'ended' });
        // Over: nothing left to claim.
        expect((await api.post(`/v1/calls/${call.id}/claim`, {})).status).toBe(409);
      } finally {
        watcher.close();
      }
    }, 30_000);

    it('refuses what it must: a call not ringing yet or answered by a model (409), another account’s call (404), an expired console token (401), a console token off its routes (401), an API key on refresh (401)', async () => {
      const alice = await consoleToken('alice');
      // The caller is not on the line yet (no media stream): nothing rings for a person.
      const { call: early } = await ringIn(frontDesk, { stream: false });
      const notYet = await as(alice.token).post(`/v1/calls/${early.id}/claim`, {});
      expect(notYet.status).toBe(409);
      expect(notYet.body.code).toBe('conflict');
      const modelAgent = (await api.post('/v1/agents', { name: 'Model', languages: [{ code: 'en-US' }] })).body.id;
      const web = (await api.post('/v1/realtime/tokens', { agent_id: modelAgent })).body;
      expect((await as(alice.token).post(`/v1/calls/${web.call_id}/claim`, {})).status).toBe(409);

      expect((await other.post(`/v1/calls/${early.id}/claim`, {})).status).toBe(404);
      const theirs = (await other.post('/v1/realtime/tokens', { role: 'console', operator: 'eve' })).body as Minted;
      expect((await as(theirs.token).post(`/v1/calls/${early.id}/claim`, {})).status).toBe(404);

      // Genuine tokens (signed with the deployment's key) past their window, or past their session's end.
      const claims = JSON.parse(Buffer.from(alice.token.slice(4).split('.')[0], 'base64url').toString()) as RealtimeTokenClaims & { exp: number };
      const signer = new SignedTokens<RealtimeTokenClaims>(SECRET_KEY, 'realtime');
      const resign = (changes: Partial<RealtimeTokenClaims>, now = Date.now()) => `rtk_${signer.sign({ ...claims, ...changes }, 60, now).token}`;
      const expired = resign({ jti: 'expired' }, Date.now() - 3_600_000);
      for (const [what, res] of [
        ['ringing', await as(expired).get('/v1/calls/ringing')],
        ['claim', await as(expired).post(`/v1/calls/${early.id}/claim`, {})],
        ['refresh', await as(expired).post('/v1/realtime/tokens/refresh', {})],
      ] as const) {
        expect([what, res.status, res.body.code]).toEqual([what, 401, 'unauthenticated']);
      }

      // A console token opens only its three routes; a refresh takes only a console token.
      for (const res of [
        await as(alice.token).get('/v1/calls'),
        await as(alice.token).get(`/v1/calls/${early.id}`),
        await as(alice.token).post(`/v1/calls/${early.id}/end`, {}),
        await as(alice.token).post('/v1/realtime/tokens', { role: 'console', operator: 'mallory' }),
        await api.post('/v1/realtime/tokens/refresh', {}),
      ]) {
        expect(res.status).toBe(401);
        expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      }
      const refreshed = await as(alice.token).post('/v1/realtime/tokens/refresh', {});
      expect(refreshed.status).toBe(201);
      expect(refreshed.body).toMatchObject({ role: 'console', operator: 'alice', session_expires_at: alice.session_expires_at });
      await api.post(`/v1/calls/${early.id}/end`, {});
    }, 30_000);
  });

  describe('the operator console page in real Chromium', () => {
    let browser: Browser;
    const contexts: BrowserContext[] = [];

    beforeAll(async () => {
      browser = await launchChromium('Thank you for calling, this is the front desk.');
    }, 60_000);

    afterAll(async () => {
      for (const c of contexts) await c.close();
      await browser?.close();
    });

    /** An operator's own browser profile on /operator, signed in through the link's fragment. */
    const openConsole = async (operator: string): Promise<Page> => {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      const minted = await consoleToken(operator);
      await page.goto(`${platform.baseUrl}/operator#token=${minted.token}`);
      await until(async () => (await page.locator('#link').textContent())?.includes('Watching for ringing calls'), `${operator}’s console watching`, 10_000).catch(async (e: Error) => {
        throw new Error(`${e.message}; the page says: ${await page.locator('main').innerText()}`);
      });
      return page;
    };
    const heardMs = async (page: Page) => Number((await page.locator('#callerLevel').getAttribute('data-heard-ms')) ?? 0);

    it('two consoles see the call ring, both click Claim at once, exactly one goes on the call and hears and is heard, the other is told; hanging up ends it', async () => {
      const pages = await Promise.all([openConsole('alice'), openConsole('bob')]);
      for (const [page, name] of [
        [pages[0], 'alice'],
        [pages[1], 'bob'],
      ] as const) {
        expect(await page.locator('#operator').textContent()).toBe(name);
        // The token left the address bar as soon as the page read it.
        expect(page.url()).toBe(`${platform.baseUrl}/operator`);
      }

      const { call, caller, from } = await ringIn(frontDesk);
      const rows = pages.map((p) => p.locator('#ringing li', { hasText: from }));
      for (const row of rows) {
        await row.waitFor({ timeout: 10_000 });
        expect(await row.textContent()).toContain(frontDesk);
      }
      const claimButtons = rows.map((row) => row.getByRole('button', { name: 'Claim' }));
      for (const button of claimButtons) expect(await button.isEnabled()).toBe(true);
      // Clicked in the pages themselves, at once: Playwright's pointer clicks run one after the other, and the first
      // claim's gone event can take the row from the second page before its click lands.
      await Promise.all(claimButtons.map((button) => button.evaluate((b) => (b as unknown as { click(): void }).click())));

      const states = await Promise.all(
        pages.map((p) =>
          until(async () => {
            if ((await p.locator('#callState').textContent())?.startsWith('Connected')) return 'on the call';
            if ((await p.locator('#notice').textContent())?.includes('Someone else took the call')) return 'told';
            return undefined;
          }, 'each page to settle', 15_000).catch(async (e: Error) => {
            throw new Error(`${e.message} (call state: ${await p.locator('#callState').textContent()}; notice: ${await p.locator('#notice').textContent()})`);
          }),
        ),
      );
      expect([...states].sort()).toEqual(['on the call', 'told']);
      const winner = pages[states.indexOf('on the call')];
      const loser = pages[states.indexOf('told')];
      expect(await loser.locator('#call').isHidden()).toBe(true);
      await rows[pages.indexOf(loser)].waitFor({ state: 'detached', timeout: 5_000 });
      expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'in_progress', claimed_by: pages.indexOf(winner) === 0 ? 'alice' : 'bob' });

      // The winner's fake microphone (4 s of silence, then the phrase) reaches the caller on the phone line.
      const joinedAt = caller.receivedFrames;
      await until(() => loudestFrame(caller.receivedAudio().subarray(joinedAt * 160)).rms > 1000, 'the operator’s microphone at the caller', 20_000);
      // The caller's tone reaches the page: its caller meter hears it.
      await caller.sendAudio(toneMulaw(300, 2), { paced: true });
      await until(async () => (await heardMs(winner)) >= 500, 'the caller heard in the page', 10_000);

      await winner.getByRole('button', { name: 'Hang up' }).click();
      await caller.closed;
      expect(await ended(call.id)).toMatchObject({ end_reason: 'completed' });
      await until(async () => (await winner.locator('#callState').textContent()) === 'The call ended.', 'the page to say the call ended', 5_000);
      // Free again: the next ringing call can be claimed from this page.
      expect(await winner.locator('#hangup').isDisabled()).toBe(true);
    }, 90_000);
  });
});
