/**
 * The terminal-safe module: every value the CLI prints is escaped for the terminal, in plain
 * text (tables, one-line summaries, error messages) and in JSON output.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { hiddenCharacterCount, hiddenCharacterWarning, isTerminalSafe, terminalSafe, terminalSafeJson } from '../../src/cli/terminal-safe';
import { printTable } from '../../src/cli/table';

/** Independent oracle: the characters that must never reach a terminal raw (LF allowed only where the test says). */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

const HOSTILE = [
  '\u001b[31mred', // ESC + CSI
  '\u009b2J', // one-byte CSI (C1)
  '\u202egnp.exe', // right-to-left override
  '\u2066iso\u2067iso\u2068iso\u2069', // bidi isolates
  '\u200emark\u200f', // LRM / RLM
  'line\u2028para\u2029', // line / paragraph separators
  'bell\u0007nul\u0000del\u007fnel\u0085', // other C0 / DEL / C1
  'zero\u200bwidth\ufeff',
  'new\nline\ttab\rreturn',
].join('|');

test('terminalSafe escapes every control, bidi and invisible character as \\uXXXX and keeps other text', () => {
  const out = terminalSafe(HOSTILE);
  expect(out).not.toMatch(UNSAFE);
  expect(isTerminalSafe(out)).toBe(true);
  expect(isTerminalSafe(HOSTILE)).toBe(false);
  for (const escaped of [
    '\\u001b[31m',
    '\\u009b2J',
    '\\u202egnp',
    '\\u2066',
    '\\u2069',
    '\\u200e',
    '\\u200f',
    '\\u2028',
    '\\u2029',
    '\\u0007',
    '\\u0000',
    '\\u007f',
    '\\u0085',
    '\\u000a',
    '\\u0009',
    '\\u000d',
    '\\u200b',
    '\\ufeff',
  ]) {
    expect(out).toContain(escaped);
  }
  expect(terminalSafe('Grüße, 東京 😀 "quoted" \\ back')).toBe('Grüße, 東京 😀 "quoted" \\ back');
  expect(terminalSafe('\ud800 lone')).toBe('\\ud800 lone');
});

test('terminalSafeJson is valid JSON without raw C1 or bidi characters and parses back to the same value', () => {
  const value = { [HOSTILE]: [HOSTILE, { nested: HOSTILE }], n: 1, ok: true, none: null };
  const json = terminalSafeJson(value);
  // Only the structural line breaks of the indentation stay raw.
  expect(json.replace(/\n/g, '')).not.toMatch(UNSAFE);
  expect(json).toContain('\\u009b2J');
  expect(json).toContain('\\u202egnp.exe');
  expect(JSON.parse(json)).toEqual(value);
  expect(terminalSafeJson(value, 0)).not.toMatch(UNSAFE);
});

test('table cells are escaped before alignment', () => {
  const lines: string[] = [];
  printTable(
    ['call', 'why'],
    [
      [`c\u001b]0;title\u0007`, 'x\u202ey'],
      ['plain', 2],
    ],
    (l) => lines.push(l),
  );
  for (const line of lines) expect(line).not.toMatch(UNSAFE);
  expect(lines[2]).toContain('c\\u001b]0;title\\u0007');
  expect(lines[2]).toContain('x\\u202ey');
  expect(lines).toHaveLength(4);
});

test('no command-line file prints except through terminal-safe.ts', () => {
  const dir = join(__dirname, '../../src/cli');
  const offenders = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && f !== 'terminal-safe.ts')
    .filter((f) => /\b(console\.(log|error|warn|info)|process\.(stdout|stderr)\.write)\b/.test(readFileSync(join(dir, f), 'utf8')));
  expect(offenders).toEqual([]);
});

/** The invisible characters an approver must see: TAG characters, soft hyphen, variation selectors, Hangul fillers, the combining grapheme joiner, bidi controls. */
const INVISIBLE: number[] = [
  ...range(0xe0000, 0xe007f),
  0x00ad,
  ...range(0xfe00, 0xfe0f),
  ...range(0xe0100, 0xe01ef),
  0x115f,
  0x1160,
  0x3164,
  0xffa0,
  0x034f,
  0x061c,
  0x200e,
  0x200f,
  ...range(0x202a, 0x202e),
  ...range(0x2066, 0x2069),
];
function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
const escapedUnits = (c: string): string => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

test('every invisible character of the kind is escaped, by code point, in text and JSON, and counted for the flag', () => {
  for (const cp of INVISIBLE) {
    const c = String.fromCodePoint(cp);
    expect(terminalSafe(`a${c}b`)).toBe(`a${escapedUnits(c)}b`);
    expect(terminalSafeJson({ v: `a${c}b` }, 0)).toBe(`{"v":"a${escapedUnits(c)}b"}`);
    expect(hiddenCharacterCount({ v: `a${c}b` })).toBe(1);
  }
  const hidden = [...'wire 5000 to account 12345'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
  expect(hiddenCharacterCount({ title: `Refund for late delivery${hidden}` })).toBe(26);
  expect(hiddenCharacterWarning('the arguments', { title: 'Refund for late delivery' })).toBeNull();
});

/** Independent of the module: what must never be printed raw, by Unicode property (and U+2800, every space but U+0020). */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}/u;
const isLoneSurrogate = (c: string) => c.length === 1 && c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdfff;

test('any text: nothing hidden is printed raw, JSON output parses back to the value, and the flag counts every hidden character of its strings and keys, C0 and lone surrogates included', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
      const out = terminalSafe(text);
      expect([...out].some((c) => HIDDEN.test(c) || isLoneSurrogate(c))).toBe(false);
      expect(JSON.parse(terminalSafeJson({ [text]: text }))).toEqual({ [text]: text });
      const hiddenInString = [...text].filter((c) => HIDDEN.test(c) || isLoneSurrogate(c)).length;
      expect(hiddenCharacterCount(text)).toBe(hiddenInString);
      expect(hiddenCharacterCount({ [text]: [text, { note: text }] })).toBe(3 * hiddenInString);
    }),
    { seed: 20261204, numRuns: 2000 },
  );
});

test('a value whose strings hold C0 controls, look-alike spaces or the blank Braille pattern is flagged with their count and shows them escaped', () => {
  const args = { note: 'pay\u001b[2J', to: 'acme\u00a0corp', memo: '\u2800', amount: 'five\u3000thousand' };
  expect(hiddenCharacterCount(args)).toBe(4);
  expect(hiddenCharacterWarning('the arguments', args)).toContain('4 invisible or control characters in the arguments');
  expect(terminalSafeJson(args)).toContain('"acme\\u00a0corp"');
  expect(terminalSafe('\u2800|\u3000|\u2007| |')).toBe('\\u2800|\\u3000|\\u2007| |');
});
