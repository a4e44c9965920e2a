/**
 * Terminal-safe output for the command line. Model output (call ids, tool
 * names, arguments), tool and provider error text and schema messages quoting model-chosen keys
 * reach `show`, `pending` and `resolve`; printed raw, an ESC or CSI sequence in them can
 * rewrite the operator's screen, set the window title or fake a line, and a bidi override can
 * make `gnp.exe` read as `exe.png`. Every line the CLI prints goes through this module.
 *
 * What is escaped, as `\uXXXX` per UTF-16 unit (the JSON / JavaScript notation, so the text stays
 * readable and a JSON output stays valid JSON that parses back to the original value): every
 * character a person cannot see, as `src/checkpoint/visible-text.ts` defines them by Unicode
 * property (controls, with, in plain text, TAB and LF; format characters such as bidi controls and
 * zero-width characters; default-ignorable code points; line and paragraph separators; every
 * space but U+0020; U+2800; lone surrogates). An emoji sequence joined by U+200D or styled by a
 * variation selector shows those as escapes: a person approving a call sees every code point
 * that runs.
 */
import { HIDDEN_CHARACTER, hiddenCharactersIn } from '../checkpoint/visible-text';

const UNSAFE_TEXT = new RegExp(HIDDEN_CHARACTER, 'gu');
/** In `JSON.stringify` output every raw C0 character is structural whitespace (strings escape theirs). */
const UNSAFE_IN_JSON = new RegExp(`(?![\\u0000-\\u001f])${HIDDEN_CHARACTER}`, 'gu');

/** `\uXXXX` for each UTF-16 unit of `c` (an astral character is escaped as its surrogate pair, as JSON writes it). */
const escapeChar = (c: string): string => Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/**
 * `text` with every unsafe character (see the module comment) replaced by its `\uXXXX`
 * escape; other text, any script and emoji included (but for their joiners and selectors), is
 * unchanged. Total: never throws.
 */
export function terminalSafe(text: string): string {
  return String(text).replace(UNSAFE_TEXT, escapeChar);
}

/**
 * `text` with every unsafe character escaped as by {@link terminalSafe}, except that its line
 * feeds stay line breaks (a stack trace stays readable, one frame a line); CR, U+2028 and
 * every other control are escaped, so no line can overwrite or fake another.
 */
export function terminalSafeLines(text: string): string {
  return String(text).split('\n').map(terminalSafe).join('\n');
}

/** True when `text` holds no character {@link terminalSafe} would escape. */
export function isTerminalSafe(text: string): boolean {
  return String(text).search(UNSAFE_TEXT) === -1;
}

/**
 * How many characters (code points) of the strings and keys in `value` would be shown escaped
 * (C0 controls inside strings included): the count a view flags beside the escaped text, so a
 * person knows the value holds text that renders as nothing or reorders what is shown. Walks the
 * value without recursion (any depth).
 */
export function hiddenCharacterCount(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === 'string') count += hiddenCharactersIn(next);
    else if (Array.isArray(next)) for (const member of next) stack.push(member);
    else if (next !== null && typeof next === 'object') {
      for (const [key, member] of Object.entries(next)) {
        count += hiddenCharactersIn(key);
        stack.push(member);
      }
    }
  }
  return count;
}

/**
 * The warning a view shows beside `value` (named `what`, e.g. `the arguments`) when it holds
 * hidden characters (see {@link hiddenCharacterCount}); null when it holds none.
 */
export function hiddenCharacterWarning(what: string, value: unknown): string | null {
  const count = hiddenCharacterCount(value);
  if (count === 0) return null;
  return `WARNING: ${count} invisible or control character${count === 1 ? '' : 's'} in ${what}, shown as \\uXXXX escapes; they reach the tool as they are`;
}

/**
 * `JSON.stringify(value, null, indent)` with the characters JSON leaves raw (DEL, C1, bidi,
 * invisible format characters, U+2028/U+2029) escaped as `\uXXXX` inside strings and keys.
 * The result is valid JSON and `JSON.parse` gives back `value` exactly.
 */
export function terminalSafeJson(value: unknown, indent = 2): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(UNSAFE_IN_JSON, escapeChar);
}

/** Prints one line to stdout, escaped with {@link terminalSafe}. */
export function printLine(text: string): void {
  console.log(terminalSafe(text));
}

/** Prints one line to stderr, escaped with {@link terminalSafe}. */
export function printError(text: string): void {
  console.error(terminalSafe(text));
}

/** Writes `text` (lines ending in line feeds, e.g. a log entry) to stderr, escaped with {@link terminalSafeLines}. */
export function writeErrorLines(text: string): void {
  process.stderr.write(terminalSafeLines(text));
}

/** Prints `value` as indented JSON to stdout, escaped with {@link terminalSafeJson}. */
export function printJson(value: unknown): void {
  console.log(terminalSafeJson(value));
}
