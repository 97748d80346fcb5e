const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });

/** English language names (lower case) to ISO 639-1 codes, built from the runtime's CLDR data. */
const CODE_BY_NAME: Map<string, string> = (() => {
  const map = new Map<string, string>();
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  for (const a of letters) {
    for (const b of letters) {
      const name = names.of(a + b);
      if (name && name.toLowerCase() !== a + b) map.set(name.toLowerCase(), a + b);
    }
  }
  return map;
})();

/**
 * One region tag per language: `hi`, `hi-IN`, `hi_IN` and `Hindi` all become `hi-IN`. A bare language takes its
 * most likely region (CLDR likely subtags, as `Intl.Locale.maximize` knows them). Returns undefined for
 * something that is neither a language tag nor a language name.
 */
export function normalizeLanguage(input: string): string | undefined {
  const raw = input.trim().replace(/_/g, '-');
  const fromName = CODE_BY_NAME.get(raw.toLowerCase());
  const candidate = fromName ?? raw;
  try {
    const locale = new Intl.Locale(candidate);
    if (!names.of(locale.language)) return undefined;
    const region = locale.region ?? locale.maximize().region;
    return region ? `${locale.language}-${region}` : locale.language;
  } catch {
    return undefined;
  }
}
