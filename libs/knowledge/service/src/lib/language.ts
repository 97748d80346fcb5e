/**
 * The PostgreSQL text-search configuration for a base's language (BCP-47): its primary subtag picks one of the
 * built-in snowball configurations; anything else is `simple` (no stemming, no stop words). The repository keeps
 * `simple` when the server lacks the named configuration (older servers have fewer).
 */
const CONFIGS: Record<string, string> = {
  ar: 'arabic',
  hy: 'armenian',
  eu: 'basque',
  ca: 'catalan',
  da: 'danish',
  nl: 'dutch',
  en: 'english',
  fi: 'finnish',
  fr: 'french',
  de: 'german',
  el: 'greek',
  hi: 'hindi',
  hu: 'hungarian',
  id: 'indonesian',
  ga: 'irish',
  it: 'italian',
  lt: 'lithuanian',
  ne: 'nepali',
  no: 'norwegian',
  nb: 'norwegian',
  nn: 'norwegian',
  pt: 'portuguese',
  ro: 'romanian',
  ru: 'russian',
  sr: 'serbian',
  es: 'spanish',
  sv: 'swedish',
  ta: 'tamil',
  tr: 'turkish',
  yi: 'yiddish',
};

export const DEFAULT_LANGUAGE = 'en';

/** A BCP-47 language tag (primary subtag of 2-3 letters, then subtags of 1-8 letters or digits). */
export const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;

export function textSearchConfig(language: string): string {
  return CONFIGS[language.split('-')[0].toLowerCase()] ?? 'simple';
}
