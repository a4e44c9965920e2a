/**
 * Which characters a person cannot see, by Unicode property, so the whole kind is covered and not
 * a list of examples. Views escape them (`src/cli/terminal-safe.ts`), count them beside what a
 * person decides on, and names of people who decide may not hold them. Pure and sandbox-safe.
 *
 * Hidden: controls (`\p{Cc}`), format characters (`\p{Cf}`: bidi controls, zero-width
 * characters, TAG characters), default-ignorable code points (variation selectors, Hangul
 * fillers), line and paragraph separators (`\p{Zl}`, `\p{Zp}`), every space separator but the
 * ASCII space (`\p{Zs}`: no-break, en, em, ideographic spaces look like U+0020 or like nothing),
 * the blank Braille pattern U+2800, and lone surrogates (not text).
 */

/** One hidden character, as a regular-expression source for the `u` flag. */
export const HIDDEN_CHARACTER = '(?:(?! )\\p{Zs}|[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}\\u2800\\ud800-\\udfff])';

const HIDDEN_ANYWHERE = new RegExp(HIDDEN_CHARACTER, 'gu');

/** How many code points of `text` are hidden (see the module comment). */
export function hiddenCharactersIn(text: string): number {
  return text.match(HIDDEN_ANYWHERE)?.length ?? 0;
}

/** Most UTF-16 code units of the name of who decides (an approval, a rejection, a resolution). */
export const MAX_DECIDER_NAME_CHARS = 256;

/** Letters, marks, numbers, punctuation, symbols and the ASCII space: what a name may be written with. */
const NAME_CHARACTERS = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]+$/u;

/**
 * Why `name` cannot name who decides, or null when it can: a string of 1 to
 * {@link MAX_DECIDER_NAME_CHARS} UTF-16 units of letters, marks, numbers, punctuation, symbols and
 * ASCII spaces (no private-use, unassigned or noncharacter code points), none hidden (see the
 * module comment), not blank, without spaces around it, no combining mark on nothing or five in
 * a row, so the name a person reads in an audit is the name stored, never reordered
 * (`\u202eecila` reads as `alice`), padded or blank.
 */
export function deciderNameRefusal(name: unknown): string | null {
  const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 64)) : typeof name;
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_DECIDER_NAME_CHARS) {
    return `who decides must be named by a string of 1 to ${MAX_DECIDER_NAME_CHARS} characters, got ${shown}`;
  }
  const hidden = hiddenCharactersIn(name);
  if (hidden > 0)
    return `the name of who decides holds ${hidden} invisible or control character${hidden === 1 ? '' : 's'} (controls, bidi, zero-width, non-ASCII spaces): ${shown}`;
  if (name.trim() === '') return 'the name of who decides is blank';
  if (name.trim() !== name) return `the name of who decides starts or ends with a space (it would read as another name): ${shown}`;
  if (!NAME_CHARACTERS.test(name))
    return `the name of who decides holds a character that is not a letter, mark, number, punctuation, symbol or space (private-use, unassigned): ${shown}`;
  if (/(?:^| )\p{M}|\p{M}{5}/u.test(name)) return `the name of who decides has a combining mark on nothing (first, or after a space) or five in a row: ${shown}`;
  return null;
}
