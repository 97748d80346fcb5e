import { irregularForms } from './irregular-forms';
import { compoundSpellings, swappedLetters } from './knowledge.repository';
import { spokenFillers, withoutFillerPhrases } from './spoken-fillers';

describe("a query's words", () => {
  it('gives each irregular form its other forms under english only', () => {
    expect(irregularForms('english', 'The driver CAME, I bought it')).toEqual([
      { word: 'came', form: 'come' },
      { word: 'bought', form: 'buy' },
    ]);
    expect(irregularForms('english', 'it went')).toEqual([
      { word: 'went', form: 'go' },
      { word: 'went', form: 'gone' },
      { word: 'went', form: 'goes' },
    ]);
    // Forms that are other words too are not in the table.
    expect(irregularForms('english', 'I saw it on the left')).toEqual([]);
    expect(irregularForms('french', 'came bought')).toEqual([]);
  });

  it('swaps each pair of different neighbouring letters of words of 4+ letters', () => {
    expect(swappedLetters('refnud').map((s) => s.swapped)).toEqual(['erfnud', 'rfenud', 'renfud', 'refund', 'refndu']);
    // A doubled letter swapped with itself is the word again; short words are left alone.
    expect(swappedLetters('fee').map((s) => s.swapped)).toEqual([]);
    expect(swappedLetters('mdoe Mdoe').map((s) => s.swapped)).toEqual(['dmoe', 'mode', 'mdeo']);
    expect(swappedLetters('sleep').map((s) => s.swapped)).toEqual(['lseep', 'selep', 'slepe']);
  });

  it('spells a hyphenated word without its hyphens, and a word of 4+ letters with a hyphen at each place inside it', () => {
    expect(compoundSpellings('E-mail or Wi-Fi set-up').map((c) => c.spelling)).toEqual(['email', 'wifi', 'setup']);
    expect(compoundSpellings('wifi').map((c) => c.spelling)).toEqual(['w-ifi', 'wi-fi', 'wif-i']);
    expect(compoundSpellings('fee')).toEqual([]);
  });

  it('knows English fillers and drops the two-word hedges', () => {
    expect(spokenFillers('english')).toEqual(expect.arrayContaining(['um', 'like', 'gonna', 'dont', 'isn', 'thing']));
    expect(spokenFillers('english')).not.toEqual(expect.arrayContaining(['right']));
    expect(spokenFillers('german')).toEqual([]);
    expect(withoutFillerPhrases('english', 'You know, what kind of filter, I mean the sort of thing')).toBe(' , what   filter,   the   thing');
    expect(withoutFillerPhrases('simple', 'you know')).toBe('you know');
  });
});
