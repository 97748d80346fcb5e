import { subjectMatches } from './bus';

describe('subjectMatches', () => {
  it('matches an exact subject', () => {
    expect(subjectMatches('parley.events.call.started', 'parley.events.call.started')).toBe(true);
    expect(subjectMatches('parley.events.call.started', 'parley.events.call.ended')).toBe(false);
  });

  it('matches exactly one token with *', () => {
    expect(subjectMatches('parley.*.agents', 'parley.domain.agents')).toBe(true);
    expect(subjectMatches('parley.domain.*', 'parley.domain.agents')).toBe(true);
    expect(subjectMatches('*.*.*', 'a.b.c')).toBe(true);
    expect(subjectMatches('parley.*', 'parley.domain.agents')).toBe(false);
    expect(subjectMatches('parley.*.agents', 'parley.agents')).toBe(false);
  });

  it('matches one or more remaining tokens with >', () => {
    expect(subjectMatches('parley.events.>', 'parley.events.call')).toBe(true);
    expect(subjectMatches('parley.events.>', 'parley.events.call.transcript.updated')).toBe(true);
    expect(subjectMatches('>', 'anything.at.all')).toBe(true);
    expect(subjectMatches('parley.*.>', 'parley.domain.agents.agent.created')).toBe(true);
  });

  it('does not let > match zero tokens', () => {
    expect(subjectMatches('parley.events.>', 'parley.events')).toBe(false);
  });

  it('does not match tokens before > that differ', () => {
    expect(subjectMatches('parley.events.>', 'parley.domain.agents.agent.created')).toBe(false);
  });

  it('refuses subjects longer or shorter than the pattern', () => {
    expect(subjectMatches('a.b', 'a.b.c')).toBe(false);
    expect(subjectMatches('a.b.c', 'a.b')).toBe(false);
    expect(subjectMatches('a.*', 'a')).toBe(false);
    expect(subjectMatches('a.*', 'a.b.c')).toBe(false);
  });

  it('compares whole tokens, not prefixes', () => {
    expect(subjectMatches('parley.event', 'parley.events')).toBe(false);
    expect(subjectMatches('parley.events.call', 'parley.events.call.started')).toBe(false);
  });
});
