import { csatRating } from './csat';

describe('csatRating (csat.received’s rating: the score brought to 1..5)', () => {
  it.each([
    [1, 5, 1],
    [4, 5, 4],
    [5, 5, 5],
    [1, 10, 1],
    [10, 10, 5],
    [7, 10, 3.67],
    [5, 10, 2.78],
  ])('score %i of %i is %d', (score, scale, rating) => {
    expect(csatRating(score, scale)).toBe(rating);
  });
});
