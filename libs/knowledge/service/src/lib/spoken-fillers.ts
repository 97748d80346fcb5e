/**
 * What a caller says that carries no meaning for a search, under the `english` configuration (docs/knowledge.md,
 * Search ranking, 1): searches are mostly speech recognised during a call, which PostgreSQL's stop words (written
 * for prose) let through. Left in, each is a term: one no chunk has weighs as the rarest (`um`, `gonna`: they only
 * lower every chunk's coverage), and one some chunks have (`like`, `thing`, `really`) favours those chunks for
 * nothing. They are left out as stop words are: unless the query has nothing else.
 *
 * - hesitations and back-channel: um, uh, er, hmm, yeah, okay, hi, thanks, sorry…;
 * - discourse fillers and hedges: like, really, actually, basically, literally, anyway, well;
 * - placeholder nouns: thing(s), stuff ("the filter thing");
 * - informal contractions: gonna, wanna, gotta, kinda, sorta, dunno;
 * - contractions written without their apostrophe, as recognisers often write them (dont, havent, im, whats), and
 *   the stems the parser leaves of those written with it ("isn't" → isn, t; "we'll" → ll), which the english
 *   stop list only partly has.
 *
 * Words as the `simple` parser splits a query (lower case). Not a synonym list: nothing is added, nothing here is
 * a word a knowledge base answers with ("right", "mean", "know", "maybe" stay terms).
 */
const ENGLISH_FILLERS: readonly string[] = [
  // hesitations, back-channel, politeness
  'um', 'umm', 'uh', 'uhh', 'uhm', 'er', 'erm', 'ah', 'oh', 'hmm', 'mm', 'mhm', 'yeah', 'yep', 'yes', 'hi', 'hello',
  'hey', 'okay', 'ok', 'alright', 'please', 'thanks', 'thank', 'sorry',
  // discourse fillers and hedges
  'like', 'really', 'actually', 'basically', 'literally', 'anyway', 'well',
  // placeholder nouns
  'thing', 'things', 'stuff',
  // informal contractions
  'gonna', 'wanna', 'gotta', 'kinda', 'sorta', 'dunno',
  // contractions without their apostrophe
  'dont', 'doesnt', 'didnt', 'isnt', 'wasnt', 'arent', 'werent', 'cant', 'couldnt', 'wouldnt', 'shouldnt', 'wont',
  'havent', 'hasnt', 'hadnt', 'im', 'ive', 'youre', 'youve', 'youll', 'theyre', 'theyve', 'thats', 'whats', 'theres',
  'hes', 'shes',
  // what the parser leaves of contractions with their apostrophe
  'isn', 'wasn', 'aren', 'weren', 'couldn', 'wouldn', 'shouldn', 'didn', 'doesn', 'haven', 'hasn', 'hadn', 'won',
  'll', 've', 're', 'd', 'm',
];

/** Hedges of two words whose parts are words in their own right elsewhere ("what kind of filter" keeps "filter"). */
const ENGLISH_FILLER_PHRASES = /\b(?:you know|i mean|kind of|sort of)\b/gi;

/** The fillers of a text-search configuration (none but for `english`). */
export function spokenFillers(config: string): readonly string[] {
  return config === 'english' ? ENGLISH_FILLERS : [];
}

/** The query without the configuration's two-word fillers (replaced by a space). */
export function withoutFillerPhrases(config: string, query: string): string {
  return config === 'english' ? query.replace(ENGLISH_FILLER_PHRASES, ' ') : query;
}
