/**
 * The dev phone: one self-contained page (no build step, no CDN) served at GET /dev/phone. It keeps the switch's
 * socket open (rings, answers, declines, hangs up, calls agents) and carries a call's audio on the media stream with
 * the browser client the gateway serves at `/v1/embed/` (the realtime protocol, libs/contracts/src/realtime.ts),
 * behind one seam, `openAudioLeg`; its keypad sends DTMF on that stream.
 */
export function devPhonePage(): string {
  return PAGE;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley dev phone</title>
<script src="/v1/embed/"></script>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
  main { max-width: 560px; margin: 0 auto; padding: 16px; }
  h1 { font-size: 20px; margin: 8px 0 4px; }
  section { background: #fff; border-radius: 10px; padding: 12px 14px; margin: 12px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 14px; text-transform: uppercase; letter-spacing: .04em; color: #5b6474; margin: 0 0 8px; }
  button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid #c4c9d2; background: #fff; cursor: pointer; }
  button.go { background: #1f8a4c; color: #fff; border-color: #1f8a4c; }
  button.stop { background: #c0392b; color: #fff; border-color: #c0392b; }
  button:disabled { opacity: .5; cursor: default; }
  input { font: inherit; padding: 5px 8px; border: 1px solid #c4c9d2; border-radius: 6px; }
  .muted { color: #5b6474; font-size: 13px; }
  .ring { border: 2px solid #1f8a4c; border-radius: 8px; padding: 8px 10px; margin: 6px 0; }
  .ring .actions, .row { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-top: 6px; }
  .keypad { display: grid; grid-template-columns: repeat(3, 56px); gap: 6px; margin-top: 8px; }
  .keypad button { padding: 10px 0; font-size: 18px; }
  #transcript p { margin: 4px 0; } #transcript .assistant { color: #1f4e8a; }
  #log { font: 12px/1.4 ui-monospace, monospace; max-height: 160px; overflow: auto; white-space: pre-wrap; color: #5b6474; }
</style>
</head>
<body>
<main>
  <h1>Parley dev phone</h1>
  <div class="muted">The development carrier: calls placed with <code>POST /v1/calls</code> ring here. <span id="link">connecting…</span></div>

  <section>
    <h2>Incoming</h2>
    <div id="incoming" class="muted">No call is ringing.</div>
  </section>

  <section id="call" hidden>
    <h2>On the call</h2>
    <div id="callInfo"></div>
    <div id="callState" class="muted"></div>
    <div class="row">
      <button id="hangup" class="stop">Hang up</button>
      <button id="mute">Mute</button>
    </div>
    <div class="row muted">You <meter id="micLevel" min="0" max="0.3" value="0"></meter>
      Agent <meter id="agentLevel" min="0" max="0.3" value="0"></meter></div>
    <div class="keypad" id="keypad"></div>
    <div id="transcript"></div>
  </section>

  <section>
    <h2>Call an agent</h2>
    <div class="row">
      <input id="agentId" placeholder="agt_…" size="30" aria-label="Agent id">
      <button id="dial" class="go">Call</button>
    </div>
    <div class="row muted">From <input id="from" size="16" aria-label="Number to call from"></div>
  </section>

  <section>
    <h2>Log</h2>
    <div id="log"></div>
  </section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const ringing = new Map();
let switchSocket;
let current; // { call, leg }

function log(text) {
  const line = new Date().toISOString().slice(11, 19) + ' ' + text + '\\n';
  $('log').textContent = line + $('log').textContent;
}

// The audio seam: a leg carries one call's audio on its media stream and reports what the far end says. It is the
// browser client the gateway serves at /v1/embed/ (the same client web calls use), pointed at the stream URL with
// the carrier's stream token; everything else on the page uses only digit(), mute() and hangup().
function openAudioLeg(streamUrl, token, on) {
  if (!window.Parley) {
    on.error('The browser client (/v1/embed/) is not served here, so this phone has no audio.');
    return { digit() {}, mute() {}, hangup() {} };
  }
  const call = new Parley.ParleyCall({ url: streamUrl, token });
  call.on('call-start', on.started);
  call.on('transcript', on.transcript);
  call.on('speech-start', () => on.speaking(true));
  call.on('speech-end', () => on.speaking(false));
  call.on('volume', on.volume);
  call.on('error', (e) => on.error(e.message + ' (' + e.code + ')'));
  call.on('call-end', (e) => on.ended(e.reason));
  call.start().catch(() => undefined); // reported by the error and call-end events
  return {
    digit: (d) => { if (call.active) call.sendDigits(d); },
    mute: (value) => call.mute(value),
    hangup: () => call.hangup(),
  };
}

function describe(call) {
  return (call.direction === 'outbound' ? 'From ' + call.from + ' to ' + call.to : 'To agent ' + call.agent_id + ' from ' + call.from) +
    (call.direction === 'outbound' && call.agent_id ? ' · agent ' + call.agent_id : '');
}

function renderIncoming() {
  const box = $('incoming');
  box.textContent = '';
  if (!ringing.size) { box.textContent = 'No call is ringing.'; return; }
  for (const call of ringing.values()) {
    const card = document.createElement('div');
    card.className = 'ring';
    card.textContent = describe(call);
    const actions = document.createElement('div');
    actions.className = 'actions';
    const button = (label, cls, message) => {
      const b = document.createElement('button');
      b.textContent = label;
      if (cls) b.className = cls;
      b.disabled = !!current;
      b.onclick = () => send(message);
      actions.appendChild(b);
    };
    button('Answer', 'go', { type: 'answer', call_id: call.id });
    button('Answer as machine', '', { type: 'answer', call_id: call.id, as: 'machine' });
    button('Decline', 'stop', { type: 'decline', call_id: call.id });
    card.appendChild(actions);
    box.appendChild(card);
  }
}

function send(message) {
  if (switchSocket && switchSocket.readyState === WebSocket.OPEN) switchSocket.send(JSON.stringify(message));
}

function showCall(call, state) {
  current = { call, leg: undefined, muted: false };
  $('call').hidden = false;
  $('callInfo').textContent = describe(call);
  $('callState').textContent = state;
  $('transcript').textContent = '';
  $('mute').textContent = 'Mute';
  $('agentLevel').dataset.heardMs = '0';
  renderIncoming();
}

function endCall(text) {
  if (!current) return;
  if (current.leg) current.leg.hangup();
  $('callState').textContent = text;
  log(text);
  current = undefined;
  renderIncoming();
}

function connectLeg(message) {
  if (!current || current.call.id !== message.call_id) return;
  $('callState').textContent = 'Connecting the audio…';
  current.leg = openAudioLeg(message.stream_url, message.stream_token, {
    started: () => { $('callState').textContent = 'Connected: speak to the agent.'; },
    transcript: (t) => {
      const p = document.createElement('p');
      p.className = t.role;
      p.textContent = (t.role === 'assistant' ? 'Agent: ' : 'You: ') + t.text + (t.interrupted ? ' …' : '');
      $('transcript').appendChild(p);
    },
    speaking: (yes) => { $('callState').textContent = yes ? 'The agent is speaking.' : 'Connected: the agent is listening.'; },
    volume: (v) => {
      $('micLevel').value = v.microphone;
      $('agentLevel').value = v.agent;
      // How long the agent has been heard on this call (volume comes every 100 ms): shown, and read by tests.
      if (v.agent > 0.02) $('agentLevel').dataset.heardMs = String(Number($('agentLevel').dataset.heardMs || 0) + 100);
    },
    ended: (reason) => endCall('The call ended: ' + reason + '.'),
    error: (text) => log(text),
  });
}

function onSwitchMessage(m) {
  switch (m.type) {
    case 'hello':
      if (!$('from').value) $('from').value = m.number;
      ringing.clear();
      m.ringing.forEach((call) => ringing.set(call.id, call));
      renderIncoming();
      break;
    case 'ring':
      ringing.set(m.call.id, m.call);
      log('Ringing: ' + describe(m.call));
      renderIncoming();
      break;
    case 'ring-stop': {
      const call = ringing.get(m.call_id);
      ringing.delete(m.call_id);
      if (call && !(current && current.call.id === m.call_id)) log('Stopped ringing (' + m.reason.replace('_', ' ') + ').');
      renderIncoming();
      break;
    }
    case 'connected': {
      const call = ringing.get(m.call_id) || (current && current.call);
      ringing.delete(m.call_id);
      if (!current && call) showCall(call, 'Answered.');
      connectLeg(m);
      break;
    }
    case 'dialing':
      showCall(m.call, 'Calling the agent…');
      break;
    case 'transferring':
      if (current) $('callState').textContent = 'Transferring to ' + m.destination + '…';
      break;
    case 'ended':
      if (current && current.call.id === m.call_id) {
        endCall(m.reason === 'transferred' ? 'Transferred to ' + m.destination + '.' :
          m.reason === 'remote_hangup' ? 'The agent hung up.' :
          m.reason === 'rejected' ? 'The call was refused: ' + m.message : 'You hung up.');
      }
      break;
    case 'error':
      log('Error: ' + m.message);
      break;
  }
}

function connectSwitch() {
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/dev/phone/socket';
  switchSocket = new WebSocket(url);
  switchSocket.onopen = () => { $('link').textContent = 'Connected to the dev switch.'; };
  switchSocket.onmessage = (event) => onSwitchMessage(JSON.parse(event.data));
  switchSocket.onclose = () => {
    $('link').textContent = 'Disconnected from the dev switch; retrying…';
    endCall('The dev switch went away.');
    ringing.clear();
    renderIncoming();
    setTimeout(connectSwitch, 2000);
  };
}

$('hangup').onclick = () => {
  if (!current) return;
  const { call, leg } = current;
  send({ type: 'hangup', call_id: call.id });
  if (leg) leg.hangup();
};
$('mute').onclick = () => {
  if (!current) return;
  current.muted = !current.muted;
  if (current.leg) current.leg.mute(current.muted);
  $('mute').textContent = current.muted ? 'Unmute' : 'Mute';
};
$('dial').onclick = () => {
  if (current) return log('Hang up first.');
  send({ type: 'dial', agent_id: $('agentId').value.trim(), from: $('from').value.trim() });
};
for (const key of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#']) {
  const b = document.createElement('button');
  b.textContent = key;
  b.onclick = () => { if (current && current.leg) { current.leg.digit(key); log('Pressed ' + key); } };
  $('keypad').appendChild(b);
}
connectSwitch();
</script>
</body>
</html>
`;
