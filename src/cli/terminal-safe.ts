/**
 * Terminal-safe output for the command line (issue 15 item 9). Model output (call ids, tool
 * names, arguments), tool and provider error text and schema messages quoting model-chosen keys
 * reach `show`, `pending` and `resolve`; printed raw, an ESC or CSI sequence in them can
 * rewrite the operator's screen, set the window title or fake a line, and a bidi override can
 * make `gnp.exe` read as `exe.png`. Every line the CLI prints goes through this module.
 *
 * What is escaped, as `\uXXXX` per UTF-16 unit (the JSON / JavaScript notation, so the text stays
 * readable and a JSON output stays valid JSON that parses back to the original value), by
 * Unicode property, so the whole kind is covered and not a list of examples:
 * - controls (`\p{Cc}`: C0 with, in plain text, TAB and LF, DEL, C1 with the one-byte CSI U+009B);
 * - format characters (`\p{Cf}`): every bidi control (ALM, LRM/RLM, embeddings, overrides,
 *   isolates), zero-width characters, soft hyphen U+00AD, BOM, interlinear annotation, the
 *   Unicode TAG characters U+E0000–E007F;
 * - default-ignorable code points (`\p{Default_Ignorable_Code_Point}`): what renders as nothing,
 *   such as variation selectors U+FE00–FE0F and U+E0100–E01EF, Hangul fillers U+115F, U+1160,
 *   U+3164, U+FFA0, the combining grapheme joiner U+034F;
 * - line and paragraph separators U+2028/U+2029 (`\p{Zl}`, `\p{Zp}`);
 * - lone surrogates (not text; terminals print garbage).
 * An emoji sequence joined by U+200D or styled by a variation selector shows those as escapes:
 * a person approving a call sees every code point that runs.
 */

/** One character that must never reach a terminal raw (see the module comment). */
const UNSAFE_CHAR = '[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}\\ud800-\\udfff]';
const UNSAFE_TEXT = new RegExp(UNSAFE_CHAR, 'gu');
/** In `JSON.stringify` output every raw C0 character is structural whitespace (strings escape theirs). */
const UNSAFE_IN_JSON = new RegExp(`(?![\\u0000-\\u001f])${UNSAFE_CHAR}`, 'gu');

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
 * How many characters (code points) of the strings and keys in `value` would be shown escaped:
 * the count a view flags beside the escaped text, so a person knows the value holds text that
 * renders as nothing or reorders what is shown. Structural JSON whitespace is not counted.
 */
export function hiddenCharacterCount(value: unknown): number {
  return (JSON.stringify(value) ?? '').match(UNSAFE_IN_JSON)?.length ?? 0;
}

/**
 * The warning a view shows beside `value` (named `what`, e.g. `the arguments`) when it holds
 * hidden characters (see {@link hiddenCharacterCount}); null when it holds none.
 */
export function hiddenCharacterWarning(what: string, value: unknown): string | null {
  const count = hiddenCharacterCount(value);
  if (count === 0) return null;
  return `WARNING: ${what} hold ${count} invisible or control character${count === 1 ? '' : 's'}, shown as \\uXXXX escapes; they reach the tool as they are`;
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
