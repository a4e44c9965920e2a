/**
 * What `JSON.parse` hides in JSON text: duplicate member names (it keeps the last) and number
 * literals it changes (see {@link literalChangesValue}). Read from the @humanwhocodes/momoa syntax tree. Shared by the stored-record
 * codec (`codec.ts`) and the model-input checks (`model-input.ts`). Pure: no I/O.
 *
 * momoa's parser is recursive: callers bound the text's nesting with {@link maxNestingDepth}
 * before handing it to {@link scanJsonText} or {@link findDuplicateKey}.
 */
import { parse as parseAst } from '@humanwhocodes/momoa';

/** Something `JSON.parse` would silently drop or change. `path` is JSONPath-like: `$.a.b[0]`. */
export type JsonTextFinding =
  { readonly kind: 'duplicate-key'; readonly key: string; readonly path: string } | { readonly kind: 'inexact-number'; readonly token: string; readonly path: string };

/** Deepest nesting of `[`/`{` in syntactically valid JSON text, outside strings (iterative). */
export function maxNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, (depth += 1));
    else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return max;
}

/**
 * Walks the syntax tree of valid JSON `text` (iteratively) for the first object with a repeated
 * member name (with `everyDuplicate`, every one) and, when `numbers` is set, every number literal
 * that `JSON.parse` changes (see {@link literalChangesValue}; the raw token is reported).
 * Document order is not guaranteed.
 *
 * @param text syntactically valid JSON whose nesting the caller has bounded.
 * @returns the first duplicate (or every one), and every inexact number.
 */
export function scanJsonText(text: string, options: { readonly numbers?: boolean; readonly everyDuplicate?: boolean } = {}): JsonTextFinding[] {
  const findings: JsonTextFinding[] = [];
  let duplicate = false;
  const numbers = options.numbers === true;
  const every = options.everyDuplicate === true;
  const stack: Array<{ node: any; path: string }> = [{ node: parseAst(text, { mode: 'json', ranges: true }).body, path: '$' }];
  while (stack.length > 0 && !(duplicate && !numbers && !every)) {
    const { node, path } = stack.pop()!;
    if (node.type === 'Object') {
      const seen = new Set<string>();
      for (const member of node.members) {
        const key = member.name.value as string;
        if (seen.has(key) && (every || !duplicate)) {
          findings.push({ kind: 'duplicate-key', key, path });
          duplicate = true;
        }
        seen.add(key);
        stack.push({ node: member.value, path: `${path}.${key}` });
      }
    } else if (node.type === 'Array') {
      node.elements.forEach((element: any, i: number) => stack.push({ node: element.value, path: `${path}[${i}]` }));
    } else if (node.type === 'Number' && numbers) {
      const [start, end] = node.range as [number, number];
      const token = text.slice(start, end);
      if (literalChangesValue(token, node.value as number)) findings.push({ kind: 'inexact-number', token, path });
    }
  }
  return findings;
}

/**
 * Whether a JSON number literal means another number than the double `JSON.parse` reads from it,
 * in the way a tool could act on: an integer literal no double holds exactly (`9007199254740993`,
 * `1e300`, `1e400`), or a fraction read as an integer (`0.99999999999999999`, `1e-400`). Integer
 * literals a double holds exactly (`1e20`, `1e21`, `9007199254740992`) pass, and so do fractions
 * read as the nearest fraction (`0.1`), as every JSON reader does. Pure and exact
 * (BigInt arithmetic on the decimal digits).
 *
 * @param token a JSON number literal (RFC 8259 §6 grammar).
 * @param parsed `Number(token)`.
 */
export function literalChangesValue(token: string, parsed: number): boolean {
  // At most 15 digits and no exponent: an integer below 10^15, or a fraction no double rounds to an integer.
  if (token.length <= 15 && !/[eE]/.test(token)) return false;
  const match = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (match === null) return true;
  const [, whole, fraction = '', exponentText = '0'] = match;
  const digits = (whole! + fraction).replace(/^0+/, '');
  const exponent = Number(exponentText) - fraction.length;
  if (digits === '') return !Object.is(Math.abs(parsed), 0);
  if (!Number.isFinite(parsed)) return true;
  // Trailing zeros move into the exponent: the literal is digits × 10^exponent.
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 0x30) end -= 1; // a loop: /0+$/ backtracks quadratically
  const trimmed = digits.slice(0, end);
  const scale = exponent + (digits.length - trimmed.length);
  const literalIsInteger = scale >= 0;
  if (!literalIsInteger) return Number.isInteger(parsed);
  if (!Number.isInteger(parsed)) return true;
  // A finite double below 2^1024 has at most 309 integer digits: a longer literal cannot be one.
  if (trimmed.length + scale > 310) return true;
  return BigInt(trimmed) * 10n ** BigInt(scale) !== BigInt(Math.abs(parsed));
}

/** The first object in valid JSON `text` with a repeated member name, or null. */
export function findDuplicateKey(text: string): { key: string; path: string } | null {
  const found = scanJsonText(text).find((f) => f.kind === 'duplicate-key');
  return found === undefined || found.kind !== 'duplicate-key' ? null : { key: found.key, path: found.path };
}
