import { createHash } from 'node:crypto';

/**
 * The operator console: one self-contained page (no build step, no framework, no CDN) served at GET /operator. It
 * holds nothing secret: everything it does needs the console token its person brings (URL fragment or paste box,
 * docs/operators.md). It watches the account's ringing calls (`GET /v1/calls/ringing` as SSE, read with fetch so it
 * can send the token as a header), claims one, and talks on it with the browser client the gateway serves at
 * `/v1/embed/`. Script and style are inline, so the page's Content-Security-Policy names them by hash.
 */

const STYLE = String.raw`
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
  main { max-width: 640px; margin: 0 auto; padding: 16px; }
  h1 { font-size: 20px; margin: 8px 0 4px; }
  section { background: #fff; border-radius: 10px; padding: 12px 14px; margin: 12px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 14px; text-transform: uppercase; letter-spacing: .04em; color: #5b6474; margin: 0 0 8px; }
  button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid #8a93a3; background: #fff; cursor: pointer; }
  button.go { background: #1f7a45; color: #fff; border-color: #1f7a45; }
  button.stop { background: #b03224; color: #fff; border-color: #b03224; }
  button:disabled { opacity: .5; cursor: default; }
  button:focus-visible, input:focus-visible { outline: 3px solid #2b6cb0; outline-offset: 2px; }
  input { font: inherit; padding: 5px 8px; border: 1px solid #8a93a3; border-radius: 6px; }
  label { font-weight: 600; }
  .muted { color: #4d5565; font-size: 13px; }
  .row { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-top: 8px; }
  #ringing { list-style: none; margin: 0; padding: 0; }
  #ringing li { border: 2px solid #1f7a45; border-radius: 8px; padding: 8px 10px; margin: 6px 0; display: flex; gap: 8px; align-items: center; justify-content: space-between; }
  #ringing li.taken { border-color: #8a93a3; color: #4d5565; }
  .keypad { display: grid; grid-template-columns: repeat(3, 56px); gap: 6px; margin-top: 8px; }
  .keypad button { padding: 10px 0; font-size: 18px; }
  #notice:empty, #sessionEnded:empty { display: none; }
  #notice { background: #fff7e0; border: 1px solid #e0b84c; border-radius: 8px; padding: 8px 10px; }
  #sessionEnded { background: #fdecea; border: 1px solid #b03224; border-radius: 8px; padding: 8px 10px; }
  #transcript p { margin: 4px 0; }
  #log { font: 12px/1.4 ui-monospace, monospace; max-height: 160px; overflow: auto; white-space: pre-wrap; color: #4d5565; }
`;

const SCRIPT = String.raw`
"use strict";
const $ = (id) => document.getElementById(id);
// Refresh the console token once this share of its window has passed; retry a failed refresh this often.
const REFRESH_AT = 0.8;
const RETRY_MS = 5000;
const MAX_BACKOFF_MS = 30000;

const session = { token: '', operator: '', expiresAt: 0, sessionEnd: 0, refreshTimer: 0, stream: null, backoff: 1000, reconnectTimer: 0, over: false };
// Server time minus this browser's (from the Date header), so "ringing for" does not depend on the local clock.
let skewMs = 0;
const ringing = new Map(); // call id -> { call, seenAt, claiming, and once shown: item, button, age }
// Calls that stopped ringing lately: a Claim clicked as the row went still says why it cannot be had.
const departed = new Map(); // call id -> { call, reason }
let current = null; // { call, client, startedAt, heardMs, ended }

function log(text) {
  const line = new Date().toTimeString().slice(0, 8) + ' ' + text + '\n';
  $('log').textContent = line + $('log').textContent;
}
function notice(text) { $('notice').textContent = text; }
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
}

/** A realtime token's claims are readable by anyone (rtk_ + base64url JSON + "." + MAC); {} when unreadable. */
function claimsOf(token) {
  try {
    const body = token.slice(4).split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(body + '='.repeat((4 - (body.length % 4)) % 4)));
  } catch (e) {
    return {};
  }
}

/** POSTs to the API with the console token; null when the network failed. */
async function post(path) {
  try {
    return await fetch(path, {
      method: 'POST',
      headers: { authorization: 'Bearer ' + session.token, 'content-type': 'application/json' },
      body: '{}',
      cache: 'no-store',
    });
  } catch (e) {
    return null;
  }
}

async function problemText(res) {
  try { const p = await res.json(); return p.detail || p.title || ('HTTP ' + res.status); } catch (e) { return 'HTTP ' + res.status; }
}

// ---- the session: a console token, refreshed before it expires, until the session's end ----

function signIn(token) {
  token = token.trim();
  const claims = claimsOf(token);
  if (!/^rtk_/.test(token) || (claims.role && claims.role !== 'console')) {
    $('signinError').textContent = claims.role ? 'This is a token for a call (role ' + claims.role + '), not a console token.' : 'That is not a console token (they start with rtk_).';
    return;
  }
  $('signinError').textContent = '';
  stopWatching();
  Object.assign(session, { over: false, backoff: 1000 });
  $('sessionEnded').textContent = '';
  useToken(token, (claims.exp || 0) * 1000, (claims.session_exp || 0) * 1000, claims.operator || '');
  $('signin').hidden = true;
  $('console').hidden = false;
  $('signout').hidden = false;
  watch();
}

function useToken(token, expiresAt, sessionEnd, operator) {
  Object.assign(session, { token, expiresAt, sessionEnd, operator });
  $('operator').textContent = operator || 'unknown operator';
  $('sessionEnd').textContent = sessionEnd ? clock(sessionEnd) : 'unknown';
  clearTimeout(session.refreshTimer);
  // The last token of a session ends with it: nothing to refresh, the stream says when it is over.
  if (sessionEnd && expiresAt >= sessionEnd) return;
  const wait = Math.max(1000, REFRESH_AT * (expiresAt - Date.now() - skewMs));
  session.refreshTimer = setTimeout(refresh, wait);
}

async function refresh() {
  if (session.over) return;
  const res = await post('/v1/realtime/tokens/refresh');
  if (res && res.status === 201) {
    const t = await res.json();
    useToken(t.token, Date.parse(t.expires_at), Date.parse(t.session_expires_at), t.operator);
    log('Session renewed until ' + clock(Date.parse(t.expires_at)) + '.');
    return;
  }
  if (res && res.status === 401) return endSession('Your console session ended (' + (await problemText(res)) + ').');
  // Unreachable or failing for now: try again while the token still holds.
  log('Could not renew the session yet (' + (res ? await problemText(res) : 'network error') + '); retrying.');
  session.refreshTimer = setTimeout(refresh, RETRY_MS);
}

function endSession(text) {
  session.over = true;
  clearTimeout(session.refreshTimer);
  stopWatching();
  ringing.clear();
  renderRinging();
  $('link').textContent = 'Not watching for calls.';
  $('sessionEnded').textContent = text + (current && !current.ended ? ' Your current call goes on.' : '') + ' Ask for a new console link to answer calls again.';
  log(text);
}

function signOut() {
  endSession('You signed out.');
  session.token = '';
  $('console').hidden = true;
  $('signout').hidden = true;
  $('signin').hidden = false;
  $('tokenInput').value = '';
  $('tokenInput').focus();
}

// ---- the ringing calls: Server-Sent Events over fetch (EventSource cannot send the token as a header) ----

function stopWatching() {
  clearTimeout(session.reconnectTimer);
  if (session.stream) session.stream.abort();
  session.stream = null;
}

async function watch() {
  if (session.over) return;
  const controller = new AbortController();
  session.stream = controller;
  let sessionExpired = false;
  try {
    const res = await fetch('/v1/calls/ringing', {
      headers: { authorization: 'Bearer ' + session.token, accept: 'text/event-stream' },
      cache: 'no-store',
      signal: controller.signal,
    });
    if (res.status === 401) return endSession('The console token was refused (' + (await problemText(res)) + ').');
    if (!res.ok || !res.body) throw new Error(await problemText(res));
    const date = Date.parse(res.headers.get('date') || '');
    if (date) skewMs = date - Date.now();
    session.backoff = 1000;
    $('link').textContent = 'Watching for ringing calls.';
    // A (re)connected stream starts with every call ringing now: it replaces the list.
    ringing.clear();
    renderRinging();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop();
      for (const block of blocks) {
        let event = 'message';
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (!data.length) continue; // a keep-alive comment
        if (event === 'session-expired') sessionExpired = true;
        onEvent(event, JSON.parse(data.join('\n')));
      }
    }
  } catch (e) {
    if (controller.signal.aborted) return;
    log('The ringing stream failed: ' + e.message);
  }
  if (session.over || session.stream !== controller) return;
  if (sessionExpired) return endSession('Your console session ended at ' + clock(session.sessionEnd) + '.');
  const wait = session.backoff + Math.random() * 250;
  session.backoff = Math.min(MAX_BACKOFF_MS, session.backoff * 2);
  $('link').textContent = 'Lost the ringing stream; reconnecting in ' + Math.round(wait / 1000) + ' s…';
  session.reconnectTimer = setTimeout(watch, wait);
}

function describe(call) {
  if (call.seats) return 'Rendezvous ' + call.seats.map((s) => s.name + (s.taken ? ' (waiting)' : '')).join(' · ');
  return 'From ' + (call.from || 'unknown') + ' to ' + (call.to || 'unknown');
}

function onEvent(event, data) {
  if (event === 'ringing') {
    if (ringing.has(data.id)) return;
    ringing.set(data.id, { call: data, seenAt: Date.now() });
    log('Ringing: ' + describe(data) + '.');
    renderRinging();
    if (!current || current.ended) $('ringAnnounce').textContent = 'A call is ringing: ' + describe(data) + '.';
  } else if (event === 'gone') {
    const entry = ringing.get(data.call_id);
    if (!entry) return;
    ringing.delete(data.call_id);
    departed.set(data.call_id, { call: data.call || entry.call, reason: data.reason });
    if (departed.size > 50) departed.delete(departed.keys().next().value);
    const mine = current && current.call.id === data.call_id;
    if (!mine) log((data.reason === 'claimed' ? 'Answered by ' + (data.call.claimed_by || 'someone') : 'Stopped ringing') + ': ' + describe(entry.call) + '.');
    renderRinging();
  }
}

function ringingFor(entry) {
  const created = Date.parse(entry.call.created_at);
  return created ? Date.now() + skewMs - created : Date.now() - entry.seenAt;
}

// Rows are kept and updated in place, only added and removed: a person tabbing to a Claim button keeps its focus
// while other calls arrive and leave.
function renderRinging() {
  const list = $('ringing');
  for (const item of [...list.children]) if (!ringing.has(item.dataset.callId)) item.remove();
  $('noCalls').hidden = ringing.size > 0;
  document.title = (ringing.size ? '(' + ringing.size + ') ' : '') + 'Parley operator console';
  for (const [id, entry] of ringing) {
    if (!entry.item) {
      const item = document.createElement('li');
      item.dataset.callId = id;
      const text = document.createElement('div');
      text.id = 'ring-' + id;
      const what = document.createElement('div');
      what.textContent = describe(entry.call);
      const more = document.createElement('div');
      more.className = 'muted';
      const age = document.createElement('span');
      age.className = 'age';
      more.append('Agent ' + entry.call.agent_id + ' · ringing for ', age);
      text.append(what, more);
      const claimButton = document.createElement('button');
      claimButton.className = 'go';
      claimButton.setAttribute('aria-describedby', text.id);
      claimButton.onclick = () => claim(id);
      item.append(text, claimButton);
      list.append(item);
      Object.assign(entry, { item, button: claimButton, age });
    }
    entry.button.textContent = entry.claiming ? 'Claiming…' : 'Claim';
    entry.button.disabled = !!entry.claiming || !!(current && !current.ended) || session.over;
  }
  tick();
}

async function claim(id) {
  const entry = ringing.get(id);
  if (current && !current.ended) return;
  if (!entry) {
    const gone = departed.get(id);
    if (gone) notice(gone.reason === 'claimed' ? 'Someone else took the call ' + describe(gone.call).toLowerCase() + ' (claimed by ' + (gone.call.claimed_by || 'someone') + ').' : 'The call stopped ringing: ' + describe(gone.call).toLowerCase() + '.');
    return;
  }
  entry.claiming = true;
  renderRinging();
  const res = await post('/v1/calls/' + encodeURIComponent(id) + '/claim');
  entry.claiming = false;
  if (res && res.status === 201) {
    notice('');
    return answer(await res.json(), entry.call);
  }
  const why = res ? await problemText(res) : 'the network failed';
  if (res && (res.status === 409 || res.status === 404)) {
    ringing.delete(id);
    const lead = /claimed/i.test(why) ? 'Someone else took the call ' : 'The call can no longer be answered: ';
    notice(lead + describe(entry.call).toLowerCase() + ' (' + why + ').');
  } else {
    notice('Could not claim the call: ' + why + '.');
  }
  log('Claim refused: ' + why + '.');
  renderRinging();
}

// ---- the call: the browser client from /v1/embed/ on the operator token the claim answered ----

function answer(minted, call) {
  if (!window.Parley) return notice('The browser client (/v1/embed/) is not served here: this console has no audio.');
  const client = new Parley.ParleyCall({ url: minted.url, token: minted.token, callId: minted.call_id });
  current = { call: minted.call || call, client, startedAt: 0, heardMs: 0, ended: false };
  $('call').hidden = false;
  $('callInfo').textContent = describe(current.call) + ' · agent ' + current.call.agent_id;
  $('callState').textContent = 'Connecting…';
  $('transcript').textContent = '';
  $('mute').textContent = 'Mute';
  $('mute').setAttribute('aria-pressed', 'false');
  $('callerLevel').dataset.heardMs = '0';
  $('transferTo').value = '';
  setCallControls(false);
  renderRinging();
  log('Claimed: ' + describe(current.call) + '.');
  const mine = current;
  client.on('call-start', () => {
    mine.startedAt = Date.now();
    $('callState').textContent = 'Connected: you are talking to the caller.';
    setCallControls(true);
    $('hangup').focus();
  });
  client.on('volume', (v) => {
    $('micLevel').value = v.microphone;
    $('callerLevel').value = v.remote;
    // How long the caller has been heard on this call (volume comes every 100 ms): shown, and read by tests.
    if (v.remote > 0.02) $('callerLevel').dataset.heardMs = String((mine.heardMs += 100));
  });
  client.on('transcript', (t) => {
    const p = document.createElement('p');
    p.textContent = (t.role === 'user' ? 'Caller: ' : 'You: ') + t.text + (t.interrupted ? ' …' : '');
    $('transcript').append(p);
  });
  client.on('error', (e) => {
    log('Call error: ' + e.message + ' (' + e.code + ')');
    if (e.code === 'transfer_failed') $('callState').textContent = 'The transfer failed: ' + e.message + '. You are still on the call.';
  });
  client.on('call-end', (e) => endCall(mine, e.reason));
  client.start().catch(() => undefined); // reported by the error and call-end events
}

const END_TEXT = {
  completed: 'The call ended.',
  canceled: 'The call was canceled before it connected.',
  transferred: 'The call was transferred.',
  no_answer: 'The call ended: you did not connect in time.',
  hangup: 'The call ended.',
  connection_lost: 'The connection to the call was lost.',
  microphone_denied: 'The call ended: the browser refused the microphone.',
  microphone_unavailable: 'The call ended: no microphone is available.',
  insecure_context: 'The call ended: the microphone needs https (or localhost).',
};

function endCall(mine, reason) {
  if (mine.ended) return;
  mine.ended = true;
  const text = END_TEXT[reason] || 'The call ended (' + reason + ').';
  $('callState').textContent = text;
  setCallControls(false);
  log(text + ' (' + reason + ')');
  renderRinging();
}

function setCallControls(on) {
  for (const el of document.querySelectorAll('#call .live')) el.disabled = !on;
}

function tick() {
  for (const entry of ringing.values()) if (entry.age) entry.age.textContent = duration(ringingFor(entry));
  if (current && current.startedAt && !current.ended) $('callTimer').textContent = duration(Date.now() - current.startedAt);
  if (session.token && !session.over && session.sessionEnd) {
    $('sessionLeft').textContent = '(in ' + Math.max(0, Math.round((session.sessionEnd - Date.now() - skewMs) / 60000)) + ' min)';
  }
}

// ---- wiring ----

$('signin').onsubmit = (event) => {
  event.preventDefault();
  signIn($('tokenInput').value);
};
$('signout').onclick = signOut;
$('hangup').onclick = () => current && current.client.hangup();
$('mute').onclick = () => {
  if (!current) return;
  const muted = !current.client.isMuted;
  current.client.mute(muted);
  $('mute').textContent = muted ? 'Unmute' : 'Mute';
  $('mute').setAttribute('aria-pressed', String(muted));
  $('callState').textContent = muted ? 'Muted: the caller cannot hear you.' : 'Connected: you are talking to the caller.';
};
$('transferForm').onsubmit = (event) => {
  event.preventDefault();
  if (!current) return;
  try {
    current.client.transfer($('transferTo').value);
    $('callState').textContent = 'Transferring to ' + $('transferTo').value.trim() + '…';
  } catch (e) {
    $('callState').textContent = e.message;
  }
};
for (const key of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#']) {
  const b = document.createElement('button');
  b.textContent = key;
  b.className = 'live';
  b.disabled = true;
  b.setAttribute('aria-label', 'Key ' + key);
  b.onclick = () => {
    try { current.client.sendDigits(key); log('Pressed ' + key + '.'); } catch (e) { log(e.message); }
  };
  $('keypad').append(b);
}
setInterval(tick, 1000);

// A token in the fragment never reaches a server or its logs; it is taken out of the address bar at once.
function fromFragment() {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!token) return false;
  history.replaceState(null, '', location.pathname + location.search);
  signIn(token);
  return true;
}
window.addEventListener('hashchange', fromFragment);
if (!fromFragment()) $('tokenInput').focus();
`;

const BODY = String.raw`
<main>
  <h1>Parley operator console</h1>
  <p class="muted">Answer the calls that ring for a person. <button id="signout" hidden>Sign out</button></p>
  <div id="sessionEnded" role="alert"></div>

  <form id="signin">
    <section>
      <h2>Sign in</h2>
      <p class="muted">Open the link your company's server gave you, or paste its console token here.</p>
      <div class="row">
        <label for="tokenInput">Console token</label>
        <input id="tokenInput" type="password" autocomplete="off" spellcheck="false" size="36" placeholder="rtk_…" required>
        <button class="go" type="submit">Open console</button>
      </div>
      <p id="signinError" role="alert"></p>
    </section>
  </form>

  <div id="console" hidden>
    <section aria-labelledby="sessionTitle">
      <h2 id="sessionTitle">Session</h2>
      <div>Signed in as <strong id="operator"></strong>; the session ends at <span id="sessionEnd"></span> <span id="sessionLeft" class="muted"></span>.</div>
      <div id="link" class="muted">Connecting…</div>
    </section>

    <div id="notice" role="status"></div>

    <section aria-labelledby="ringingTitle">
      <h2 id="ringingTitle">Ringing</h2>
      <p id="noCalls" class="muted">No call is ringing.</p>
      <ul id="ringing" aria-label="Ringing calls"></ul>
      <div id="ringAnnounce" class="muted" aria-live="polite"></div>
    </section>

    <section id="call" aria-labelledby="callTitle" hidden>
      <h2 id="callTitle">Your call</h2>
      <div id="callInfo"></div>
      <div><span id="callState" role="status"></span> <span id="callTimer" aria-label="Call duration"></span></div>
      <div class="row">
        <button id="hangup" class="stop live" disabled>Hang up</button>
        <button id="mute" class="live" aria-pressed="false" disabled>Mute</button>
      </div>
      <div class="row muted">
        <label for="micLevel">You</label> <meter id="micLevel" min="0" max="0.3" value="0"></meter>
        <label for="callerLevel">Caller</label> <meter id="callerLevel" min="0" max="0.3" value="0"></meter>
      </div>
      <div class="keypad" id="keypad" role="group" aria-label="Keypad: send tones to the caller"></div>
      <form id="transferForm" class="row">
        <label for="transferTo">Transfer to</label>
        <input id="transferTo" class="live" size="20" placeholder="+15551234567 or sip:…" autocomplete="off" disabled>
        <button class="live" type="submit" disabled>Transfer</button>
      </form>
      <h2>Caller transcript</h2>
      <div id="transcript" aria-live="polite"></div>
    </section>

    <section aria-labelledby="logTitle">
      <h2 id="logTitle">Activity</h2>
      <div id="log"></div>
    </section>
  </div>
</main>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * What the page may do: its own inline script and style (by hash), the embed script and the API on this origin,
 * the media worker's socket wherever it is (MEDIA_PUBLIC_URL), the client's audio worklets (blob:). Nothing may
 * frame it (a page that framed it could trick a person into claiming calls), and it submits no form anywhere.
 */
export const OPERATOR_CONSOLE_CSP = [
  "default-src 'none'",
  `script-src 'self' blob: ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self' ws: wss:",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const OPERATOR_CONSOLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley operator console</title>
<script src="/v1/embed/"></script>
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${SCRIPT}</script>
</body>
</html>
`;

/** The page's own script, for tests that check it parses. */
export const OPERATOR_CONSOLE_SCRIPT = SCRIPT;
