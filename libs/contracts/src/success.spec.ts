import { callSucceeded, successCriteriaProblems } from './success';

describe('callSucceeded', () => {
  it('counts the default end reasons (completed, hangup, transferred) when none are given', () => {
    expect(['completed', 'hangup', 'transferred', 'no_answer', 'voicemail'].map((r) => callSucceeded({}, r))).toEqual([true, true, true, false, false]);
  });

  it('counts only the given end reasons', () => {
    expect(callSucceeded({ end_reasons: ['transferred'] }, 'transferred')).toBe(true);
    expect(callSucceeded({ end_reasons: ['transferred'] }, 'completed')).toBe(false);
  });

  it('leaves an extracted field undecided (null) until the analysis, but an end reason that does not count is false at once', () => {
    const success = { end_reasons: ['completed'], extracted_field: { name: 'booked' } };
    expect(callSucceeded(success, 'completed')).toBeNull();
    expect(callSucceeded(success, 'completed', null)).toBeNull();
    expect(callSucceeded(success, 'busy')).toBe(false);
    expect(callSucceeded(success, 'busy', { booked: true })).toBe(false);
  });

  it('without equals, takes the field present and truthy', () => {
    const success = { extracted_field: { name: 'booked' } };
    expect(callSucceeded(success, 'completed', { booked: true })).toBe(true);
    expect(callSucceeded(success, 'completed', { booked: 'Friday' })).toBe(true);
    expect(callSucceeded(success, 'completed', { booked: false })).toBe(false);
    expect(callSucceeded(success, 'completed', { booked: null })).toBe(false);
    expect(callSucceeded(success, 'completed', { booked: 0 })).toBe(false);
    expect(callSucceeded(success, 'completed', {})).toBe(false);
  });

  it('with equals, compares as text (a model that answers "true" or "4" still matches), never a missing value', () => {
    expect(callSucceeded({ extracted_field: { name: 'outcome', equals: 'booked' } }, 'completed', { outcome: 'booked' })).toBe(true);
    expect(callSucceeded({ extracted_field: { name: 'outcome', equals: 'booked' } }, 'completed', { outcome: 'not_booked' })).toBe(false);
    expect(callSucceeded({ extracted_field: { name: 'size', equals: 4 } }, 'completed', { size: '4' })).toBe(true);
    expect(callSucceeded({ extracted_field: { name: 'ok', equals: false } }, 'completed', { ok: false })).toBe(true);
    expect(callSucceeded({ extracted_field: { name: 'ok', equals: 'null' } }, 'completed', { ok: null })).toBe(false);
  });
});

describe('successCriteriaProblems', () => {
  const extraction = [{ name: 'booked' }, { name: 'outcome' }];

  it('accepts known end reasons and a field the agent extracts', () => {
    expect(successCriteriaProblems({ end_reasons: ['completed', 'transferred'], extracted_field: { name: 'booked', equals: true } }, 'post_call.success', extraction)).toEqual([]);
  });

  it('names every unknown end reason and an empty list under the given path', () => {
    expect(successCriteriaProblems({ end_reasons: ['completed', 'done'] }, 'success')).toEqual([
      { field: 'success.end_reasons[1]', message: expect.stringContaining('must be one of completed, hangup') },
    ]);
    expect(successCriteriaProblems({ end_reasons: [] }, 'post_call.success')).toEqual([{ field: 'post_call.success.end_reasons', message: 'must name at least one end reason' }]);
  });

  it('refuses a field outside the extraction, and checks the field only when the extraction is given', () => {
    expect(successCriteriaProblems({ extracted_field: { name: 'paid' } }, 'post_call.success', extraction)).toEqual([
      { field: 'post_call.success.extracted_field.name', message: "is not a field the agent's post_call.extraction extracts" },
    ]);
    expect(successCriteriaProblems({ extracted_field: { name: 'paid' } }, 'post_call.success', [])).toHaveLength(1);
    expect(successCriteriaProblems({ extracted_field: { name: 'paid' } }, 'success')).toEqual([]);
  });
});
