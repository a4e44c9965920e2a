/**
 * Terminal-safe output for the command line (issue 15 item 9). Model output (call ids, tool
 * names, arguments), tool and provider error text and schema messages quoting model-chosen keys
 * reach `show`, `pending` and `resolve`; printed raw, an ESC or CSI sequence in them can
 * rewrite the operator's screen, set the window title or fake a line, and a bidi override can
 * make `gnp.exe` read as `exe.png`. Every line the CLI prints goes through this module.
 *
 * What is escaped, as `\uXXXX` (the JSON / JavaScript notation, so the text stays readable and
 * a JSON output stays valid JSON that parses back to the original value):
 * - C0 controls U+0000–U+001F (in plain text also TAB and LF: one value is one line) and DEL U+007F;
 * - C1 controls U+0080–U+009F (U+009B is the one-byte CSI);
 * - bidi controls: ALM U+061C, LRM/RLM U+200E/U+200F, embeddings and overrides U+202A–U+202E,
 *   isolates U+2066–U+2069;
 * - invisible format characters: U+180E, zero-width U+200B–U+200D, U+2060–U+2064, U+206A–U+206F,
 *   BOM U+FEFF, interlinear annotation U+FFF9–U+FFFB;
 * - line and paragraph separators U+2028/U+2029;
 * - lone surrogates (not text; terminals print garbage).
 */

/** One character that must never reach a terminal raw (see the module comment). */
const UNSAFE_CHAR = '[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb]';
const LONE_SURROGATE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const UNSAFE_TEXT = new RegExp(`${UNSAFE_CHAR}|${LONE_SURROGATE}`, 'g');
/** In `JSON.stringify` output every raw C0 character is structural whitespace (strings escape theirs). */
const UNSAFE_IN_JSON = new RegExp(`(?![\\u0000-\\u001f])${UNSAFE_CHAR}|${LONE_SURROGATE}`, 'g');

const escapeChar = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every unsafe character (see the module comment) replaced by its `\uXXXX`
 * escape; other text, any script and emoji included, is unchanged. Total: never throws.
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
