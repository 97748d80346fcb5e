// --wire (bench:media): the agent's frames as they left the platform, read from a packet capture on loopback, beside
// the pacing the load generator reads at the carrier. The load generator shares the machine's cores with the
// platform, and where the scheduler wakes it late its reading carries that lateness; the capture's timestamps are
// the kernel's, taken as the worker's writes pass the loopback interface, so what it gives is the platform's own
// pacing, the instrument excluded. Needs tcpdump and the right to capture (root or CAP_NET_RAW); a diagnostic,
// like --explain: the verdicts stay those at the carrier.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Without tones, agent frames further apart than this start a new turn (as caller.mjs's TURN_GAP_MS). */
const TURN_GAP_MS = 100;

/** Why --wire cannot run here, or undefined when it can. */
export function wireUnavailable() {
  const probe = spawnSync('tcpdump', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) return 'tcpdump is not installed (Debian: apt-get install tcpdump)';
  return undefined;
}

/**
 * Starts capturing what leaves `port` (the media worker's carrier streams) on loopback; resolves once tcpdump
 * listens, to { stop() } which ends the capture and resolves to the |Δ − 20 ms| figures of its frames
 * (pacingOnWire).
 */
export async function captureWire(port, classify) {
  const file = join(tmpdir(), `parley-bench-wire-${process.pid}-${port}.pcap`);
  const child = spawn('tcpdump', ['-i', 'lo', '-n', '-s', '0', '-U', '-w', file, `tcp src port ${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve, reject) => {
    let said = '';
    child.stderr.on('data', (chunk) => {
      said += chunk;
      if (said.includes('listening on')) resolve();
    });
    void exited.then((code) => reject(new Error(`tcpdump exited (${code}): ${said.trim()}`)));
  });
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
      try {
        return pacingOnWire(readFileSync(file), classify);
      } finally {
        rmSync(file, { force: true });
      }
    },
  };
}

/**
 * The pacing of the agent's frames in a pcap of the worker's side of its carrier streams, by the caller's own
 * rules (caller.mjs onMedia): per connection, |Δ − 20 ms| between consecutive frames of one turn, each turn's first
 * two gaps excluded; turns told apart by `classify(payload)` (the agent-speech part of a μ-law frame, or undefined),
 * and frames of the turn a `clear` cut left out until another turn's frame comes. Returns an array of gaps (ms).
 */
export function pacingOnWire(pcap, classify) {
  const linkType = pcap.readUInt32LE(20);
  const linkHeader = linkType === 1 ? 14 : linkType === 113 ? 16 : 0;
  const lines = new Map();
  const gaps = [];
  for (let at = 24; at + 16 <= pcap.length; ) {
    const ms = pcap.readUInt32LE(at) * 1000 + pcap.readUInt32LE(at + 4) / 1000;
    const length = pcap.readUInt32LE(at + 8);
    const packet = pcap.subarray(at + 16, at + 16 + length);
    at += 16 + length;
    const tcp = (packet[linkHeader] >> 4 === 6 ? 40 : (packet[linkHeader] & 15) * 4) + linkHeader;
    const key = packet.readUInt16BE(tcp + 2);
    const payload = packet.subarray(tcp + (packet[tcp + 12] >> 4) * 4);
    if (!payload.length) continue;
    let line = lines.get(key);
    if (!line) lines.set(key, (line = { pending: Buffer.alloc(0), lastAt: 0, lastPart: undefined, runLength: 0, interrupted: undefined }));
    line.pending = line.pending.length ? Buffer.concat([line.pending, payload]) : payload;
    for (const text of wsTextFrames(line)) onMessage(line, text, ms, classify, gaps);
  }
  return gaps;
}

/** The complete unmasked text frames at the start of `line.pending` (a server's frames), leaving the rest. */
function* wsTextFrames(line) {
  let b = line.pending;
  while (b.length >= 2) {
    let size = b[1] & 127;
    let head = 2;
    if (size === 126) {
      if (b.length < 4) break;
      size = b.readUInt16BE(2);
      head = 4;
    } else if (size === 127) {
      if (b.length < 10) break;
      size = Number(b.readBigUInt64BE(2));
      head = 10;
    }
    if (b.length < head + size) break;
    const opcode = b[0] & 15;
    const body = b.subarray(head, head + size);
    b = b.subarray(head + size);
    if (opcode === 1) yield body.toString('utf8');
  }
  line.pending = b;
}

function onMessage(line, text, at, classify, gaps) {
  let message;
  try {
    message = JSON.parse(text);
  } catch {
    return;
  }
  if (message.event === 'clear') line.interrupted = line.lastPart?.turn;
  if (message.event !== 'media') return;
  const part = classify?.(Buffer.from(message.media.payload, 'base64'));
  if (part && line.interrupted !== undefined) {
    if (part.turn === line.interrupted) return;
    line.interrupted = undefined;
  }
  const gap = at - line.lastAt;
  const startsTurn = classify ? part !== undefined && part.first && part !== line.lastPart : gap > TURN_GAP_MS;
  if (startsTurn || !line.lastAt) line.runLength = 0;
  else if (++line.runLength > 2) gaps.push(Math.abs(gap - 20));
  line.lastAt = at;
  if (part) line.lastPart = part;
}
