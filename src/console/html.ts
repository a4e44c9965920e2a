/**
 * HTML with every interpolated value escaped: the console shows text that comes from a model
 * (tool arguments, the model's input, reasons) and from people, so nothing is ever written into
 * a page unescaped. `html` is a tagged template whose `${…}` values are escaped unless they are
 * {@link SafeHtml} (what another `html` produced); arrays are joined. No other way to build markup
 * exists in the console.
 *
 * Where a value lands decides how it is written (the template's own text says where):
 * - in element content (text a person reads), it is made visible before it is escaped
 *   (`terminalSafe`, src/cli/terminal-safe.ts): controls, bidi overrides and invisible format
 *   characters are shown as `\uXXXX`, so a tool argument cannot make `gnp.exe` read as `exe.png`
 *   to the person approving it;
 * - in a quoted attribute value (form fields, `data-*`, links: what goes back to the server or
 *   names a row), it is only HTML-escaped, so it parses back to exactly the same string: a call
 *   id `pay\u200b` must never be sent back as the six characters `\u200b`, which is another id;
 * - anywhere else inside a tag (an unquoted attribute, a tag or attribute name) is refused: a
 *   programming error, thrown when the template is first used.
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
  const slots = slotsOf(strings);
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value, slots[i]!) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/** A JSON value pretty-printed (2-space indent) for a `<pre>`, its strings made visible (`terminalSafeJson`) and escaped. Pure. */
export function prettyJson(value: unknown): SafeHtml {
  return new SafeHtml(escapeHtml(terminalSafeJson(value)));
}

/** Where a `${…}` of a template lands: element content, or inside a quoted attribute value. */
type Slot = 'content' | 'attribute';

function render(value: HtmlValue, slot: Slot): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) {
    if (slot === 'attribute') throw new Error('html: markup cannot go into an attribute value');
    return value.text;
  }
  if (Array.isArray(value)) return value.map((v) => render(v, slot)).join('');
  const text = String(value);
  return escapeHtml(slot === 'attribute' ? text : terminalSafe(text));
}

/** The slots of each template (a template's strings array is the same object at every call). */
const SLOTS = new WeakMap<TemplateStringsArray, readonly Slot[]>();

/**
 * Where each `${…}` of `strings` lands, by scanning the template's own text (interpolated values
 * are escaped and nested markup is whole elements, so neither changes where the next one lands):
 * outside tags, in a tag, or in a `"…"` / `'…'` attribute value.
 *
 * @throws Error when a value would land in a tag outside a quoted attribute value.
 */
function slotsOf(strings: TemplateStringsArray): readonly Slot[] {
  const known = SLOTS.get(strings);
  if (known !== undefined) return known;
  const slots: Slot[] = [];
  let state: 'text' | 'tag' | '"' | "'" = 'text';
  strings.forEach((part, i) => {
    for (let j = 0; j < part.length; j++) {
      const c = part[j]!;
      if (state === 'text') {
        if (c === '<' && /[a-zA-Z/!]/.test(part[j + 1] ?? '')) state = 'tag';
      } else if (state === 'tag') {
        if (c === '>') state = 'text';
        else if (c === '"' || c === "'") state = c;
      } else if (c === state) {
        state = 'tag';
      }
    }
    if (i === strings.length - 1) return;
    if (state === 'tag') throw new Error(`html: a value inside a tag must be in a quoted attribute value, after ${JSON.stringify(part.slice(-40))}`);
    slots.push(state === 'text' ? 'content' : 'attribute');
  });
  SLOTS.set(strings, slots);
  return slots;
}
