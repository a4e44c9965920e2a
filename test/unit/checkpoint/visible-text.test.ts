/**
 * Who decides is named by text a person can read as stored: `deciderNameRefusal` accepts names of
 * any script and refuses every name holding a character a person cannot see (by Unicode property,
 * checked here by an independent oracle) or nothing visible at all.
 */
import fc from 'fast-check';
import { deciderNameRefusal, hiddenCharactersIn, MAX_DECIDER_NAME_CHARS } from '../../../src/checkpoint/visible-text';

/** Independent oracle: controls, format, default-ignorable, separators, every space but U+0020, U+2800. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}/u;
const isLoneSurrogate = (c: string) => c.length === 1 && c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdfff;
const isHidden = (c: string) => HIDDEN.test(c) || isLoneSurrogate(c);

/** A character a person sees: letters, marks, numbers, punctuation and symbols of any script. */
const visibleChar = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(c) && !isHidden(c));
const hiddenChar = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter(isHidden);

test('a name of visible characters (any script, ASCII spaces between) is accepted', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(visibleChar, fc.constant(' ')), { minLength: 1, maxLength: 60 }), visibleChar, visibleChar, (parts, first, last) => {
      const name = [first, ...parts, last].join('');
      expect(deciderNameRefusal(name)).toBeNull();
      expect(hiddenCharactersIn(name)).toBe(0);
    }),
    { seed: 20261204, numRuns: 1_000 },
  );
});

test('a hidden character anywhere in a name is refused, and counted', () => {
  fc.assert(
    fc.property(fc.array(visibleChar, { maxLength: 20 }), hiddenChar, fc.nat(), (parts, hidden, at) => {
      const i = at % (parts.length + 1);
      const name = [...parts.slice(0, i), hidden, ...parts.slice(i)].join('');
      expect(deciderNameRefusal(name)).toMatch(/invisible or control/);
      expect(hiddenCharactersIn(name)).toBe(1);
    }),
    { seed: 20261204, numRuns: 2_000 },
  );
});

test.each([
  ['a right-to-left override that shows "alice"', '\u202eecila'],
  ['a zero-width space only', '\u200b'],
  ['a Hangul filler only', '\u3164'],
  ['a no-break space between names', 'alice\u00a0smith'],
  ['the blank Braille pattern', '\u2800'],
  ['an escape sequence', 'eve\u001b[2J'],
  ['a lone combining mark', '\u0301'],
  ['a private-use character', 'alice\uf8ff'],
  ['a noncharacter', '\uffff'],
  ['an unassigned code point', '\u0378'],
  ['spaces after the name', 'alice   '],
  ['a space before the name', ' alice'],
  ['a combining mark after a space', 'alice \u0301'],
  ['stacked combining marks', `a${'\u0301'.repeat(200)}`],
])('refused: %s', (_what, name) => {
  expect(deciderNameRefusal(name)).not.toBeNull();
});

test('refused: blank, empty, too long, not a string', () => {
  expect(deciderNameRefusal('   ')).toMatch(/blank/);
  expect(deciderNameRefusal('')).toMatch(/1 to 256/);
  expect(deciderNameRefusal('a'.repeat(MAX_DECIDER_NAME_CHARS + 1))).toMatch(/1 to 256/);
  expect(deciderNameRefusal(42)).toMatch(/got number/);
  expect(deciderNameRefusal('a'.repeat(MAX_DECIDER_NAME_CHARS))).toBeNull();
  expect(deciderNameRefusal('José Núñez 李雷 😀')).toBeNull();
  expect(deciderNameRefusal('Jose\u0301')).toBeNull();
});
