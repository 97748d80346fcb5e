import { STREAMS, SUBJECTS } from './messaging';
import { WEBHOOK_EVENT_TYPES, webhookEventSubject } from './webhook-events';

/**
 * NATS subject matching (`*` one token, `>` one or more trailing tokens), restated here because contracts import
 * nothing from the platform libraries.
 */
function covers(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

const SPEC_EVENT_TYPES = [
  'call.started',
  'call.ended',
  'call.failed',
  'call.transcript.updated',
  'call.transferred',
  'call.recording.ready',
  'call.analysed',
  'call.opt_out',
  'call.tool.called',
  'csat.received',
];
/** Ours where the spec leaves workflows' events to us (issue 21). */
const WORKFLOW_EVENT_TYPES = ['workflow_run.started', 'workflow_run.completed', 'workflow_run.recipient.finished'];
/** Ours where the spec leaves projects and budgets to us (issue 22). */
const PROJECT_EVENT_TYPES = ['project.limit_reached'];
const EVENT_TYPES = [...SPEC_EVENT_TYPES, ...WORKFLOW_EVENT_TYPES, ...PROJECT_EVENT_TYPES];

describe('webhook event catalogue', () => {
  it('lists the 10 event types of the spec, the 3 of workflow runs and the 1 of projects, each once', () => {
    expect(WEBHOOK_EVENT_TYPES).toHaveLength(14);
    expect(new Set(WEBHOOK_EVENT_TYPES).size).toBe(14);
    expect([...WEBHOOK_EVENT_TYPES].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each(EVENT_TYPES)('publishes %s on parley.events.<type> in stream PARLEY_WEBHOOK_EVENTS', (type) => {
    const subject = webhookEventSubject(type as (typeof WEBHOOK_EVENT_TYPES)[number]);

    expect(subject.name).toBe(`parley.events.${type}`);
    expect(subject.stream.name).toBe('PARLEY_WEBHOOK_EVENTS');
    expect(subject.stream.subjects.some((pattern) => covers(pattern, subject.name))).toBe(true);
  });
});

describe('subject catalogue', () => {
  const entries = Object.entries(SUBJECTS);

  it.each(entries)('%s is stored by its stream (its name matches one of the stream’s subjects)', (_key, subject) => {
    expect(subject.stream.subjects.some((pattern) => covers(pattern, subject.name))).toBe(true);
  });

  it.each(entries)('%s belongs to a declared stream', (_key, subject) => {
    expect(Object.values(STREAMS)).toContain(subject.stream);
  });

  it('declares every subject name once', () => {
    const names = entries.map(([, s]) => s.name);

    expect(new Set(names).size).toBe(names.length);
  });

  it('stores each subject in exactly one stream (JetStream refuses overlapping streams)', () => {
    const all = [...entries.map(([, s]) => s.name), ...WEBHOOK_EVENT_TYPES.map((t) => webhookEventSubject(t).name)];
    for (const name of all) {
      const storing = Object.values(STREAMS).filter((stream) => stream.subjects.some((pattern) => covers(pattern, name)));
      expect(storing.map((s) => s.name)).toHaveLength(1);
    }
  });

  it('gives every stream a unique name', () => {
    const names = Object.values(STREAMS).map((s) => s.name);

    expect(new Set(names).size).toBe(names.length);
  });
});
