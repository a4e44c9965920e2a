/**
 * HTML with every interpolated value escaped: the console shows text that comes from a model
 * (tool arguments, the model's input, reasons) and from people, so nothing is ever written into
 * a page unescaped. `html` is a tagged template whose `${…}` values are escaped unless they are
 * {@link SafeHtml} (what another `html` produced); arrays are joined. No other way to build markup
 * exists in the console.
 *
 * Text is also made visible before it is escaped (`terminalSafe`, src/cli/terminal-safe.ts):
 * controls, bidi overrides and invisible format characters are shown as `\uXXXX`, so a tool
 * argument cannot make `gnp.exe` read as `exe.png` to the person approving it.
 *
 * @see OWASP Cross Site Scripting Prevention Cheat Sheet, rule 1 (HTML-encode before inserting
 *   into element content) and rule 2 (quoted attribute values, encoded).
 */

import { terminalSafe, terminalSafeJson } from '../cli/terminal-safe';

/** Markup that is already safe (built by {@link html}); never construct it from untrusted text. */
export class SafeHtml {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What may go into `${…}` of {@link html}: text (escaped), numbers, safe markup, arrays of those; null / undefined / false render nothing. */
export type HtmlValue = string | number | SafeHtml | null | undefined | false | readonly HtmlValue[];

const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escapes `&`, `<`, `>`, `"` and `'`, so the text is safe in element content and in a quoted
 * attribute value. Pure.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Builds markup from a template; every interpolated value is escaped (see {@link HtmlValue}). Pure. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/** A JSON value pretty-printed (2-space indent) for a `<pre>`, its strings made visible (`terminalSafeJson`) and escaped. Pure. */
export function prettyJson(value: unknown): SafeHtml {
  return new SafeHtml(escapeHtml(terminalSafeJson(value)));
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(terminalSafe(String(value)));
}
