/**
 * What `JSON.parse` hides in JSON text: duplicate member names (it keeps the last) and integer
 * tokens it rounds. Read from the @humanwhocodes/momoa syntax tree. Shared by the stored-record
 * codec (`codec.ts`) and the model-input checks (`model-input.ts`). Pure: no I/O.
 *
 * momoa's parser is recursive: callers bound the text's nesting with {@link maxNestingDepth}
 * before handing it to {@link scanJsonText} or {@link findDuplicateKey}.
 */
import { parse as parseAst } from '@humanwhocodes/momoa';

/** Something `JSON.parse` would silently drop or change. `path` is JSONPath-like: `$.a.b[0]`. */
export type JsonTextFinding =
  | { readonly kind: 'duplicate-key'; readonly key: string; readonly path: string }
  | { readonly kind: 'unsafe-integer'; readonly token: string; readonly path: string };

/** Deepest nesting of `[`/`{` in syntactically valid JSON text, outside strings (iterative). */
export function maxNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, (depth += 1));
    else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return max;
}

/**
 * Walks the syntax tree of valid JSON `text` (iteratively) for the first object with a repeated
 * member name and, when `integers` is set, the first number token whose value is an integer
 * beyond ±(2^53 − 1) (`Number.isInteger && !Number.isSafeInteger` of the parsed token: the raw
 * token is reported, before any rounding shows). Document order is not guaranteed.
 *
 * @param text syntactically valid JSON whose nesting the caller has bounded.
 * @returns every kind found at most once: the first duplicate and the first unsafe integer.
 */
export function scanJsonText(text: string, options: { readonly integers?: boolean } = {}): JsonTextFinding[] {
  const findings: JsonTextFinding[] = [];
  let duplicate = false;
  let unsafe = !options.integers;
  const stack: Array<{ node: any; path: string }> = [{ node: parseAst(text, { mode: 'json', ranges: true }).body, path: '$' }];
  while (stack.length > 0 && !(duplicate && unsafe)) {
    const { node, path } = stack.pop()!;
    if (node.type === 'Object') {
      const seen = new Set<string>();
      for (const member of node.members) {
        const key = member.name.value as string;
        if (seen.has(key) && !duplicate) {
          findings.push({ kind: 'duplicate-key', key, path });
          duplicate = true;
        }
        seen.add(key);
        stack.push({ node: member.value, path: `${path}.${key}` });
      }
    } else if (node.type === 'Array') {
      node.elements.forEach((element: any, i: number) => stack.push({ node: element.value, path: `${path}[${i}]` }));
    } else if (node.type === 'Number' && !unsafe) {
      const value = node.value as number;
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        const [start, end] = node.range as [number, number];
        findings.push({ kind: 'unsafe-integer', token: text.slice(start, end), path });
        unsafe = true;
      }
    }
  }
  return findings;
}

/** The first object in valid JSON `text` with a repeated member name, or null. */
export function findDuplicateKey(text: string): { key: string; path: string } | null {
  const found = scanJsonText(text).find((f) => f.kind === 'duplicate-key');
  return found === undefined || found.kind !== 'duplicate-key' ? null : { key: found.key, path: found.path };
}
