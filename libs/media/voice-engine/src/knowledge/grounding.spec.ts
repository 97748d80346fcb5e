import { ManualClock } from '../clock';
import { FakeKnowledgeSearch } from './fake-knowledge-search';
import { groundingText, KnowledgeGrounding } from './grounding';

const passages = [{ documentId: 'doc_1', knowledgeBaseId: 'kb_1', title: 'Hours', heading: 'Store', text: 'We open at nine.' }];

function grounding(delayMs: number) {
  const clock = new ManualClock();
  const search = new FakeKnowledgeSearch(clock, passages);
  search.delayMs = delayMs;
  return { clock, search, grounding: new KnowledgeGrounding({ search, clock, timeoutMs: 250 }) };
}

describe('knowledge grounding', () => {
  it('gives the passages found within the budget', async () => {
    const { clock, grounding: g } = grounding(30);
    const found = g.lookup('when do you open', ['kb_1'], new AbortController().signal);
    await clock.advance(30);
    expect(await found).toEqual({ outcome: 'hit', hits: [expect.objectContaining({ documentId: 'doc_1' })] });
  });

  it('gives nothing at the budget, and aborts the search', async () => {
    const { clock, search, grounding: g } = grounding(1000);
    const found = g.lookup('when do you open', ['kb_1'], new AbortController().signal);
    await clock.advance(250);
    expect(await found).toEqual({ outcome: 'timeout', hits: [] });
    expect(search.queries[0].signal.aborted).toBe(true);
  });

  it('never rejects: a failing search is an error outcome, a barge-in an aborted one', async () => {
    const failing = grounding(10);
    failing.search.failWith = new Error('agents service down');
    const failed = failing.grounding.lookup('hours', ['kb_1'], new AbortController().signal);
    await failing.clock.advance(10);
    expect(await failed).toEqual({ outcome: 'error', hits: [] });

    const cut = grounding(100);
    const turn = new AbortController();
    const aborted = cut.grounding.lookup('hours', ['kb_1'], turn.signal);
    turn.abort();
    expect(await aborted).toEqual({ outcome: 'aborted', hits: [] });
  });

  it('numbers the passages for the model with their title and heading', () => {
    expect(groundingText([{ ...passages[0], score: 1 }])).toContain('[1] Hours — Store\nWe open at nine.');
  });
});
