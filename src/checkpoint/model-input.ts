/**
 * Model-supplied tool input is attacker-controlled (prompt injection): the checks that keep it from
 * changing how the fence behaves. Applied where model output is parsed (the model adapters,
 * `src/model/response-conversion.ts`) and again at the activity boundary (`prepareCall`), since users'
 * workflows call the activities directly. Pure: no I/O.
 *
 * A tool input is refused when it
 * - is not a JSON object (`not-object`) or not JSON at all (`not-json`: syntax, NaN/±Infinity,
 *   lone surrogates, non-plain objects, …);
 * - has a member named `__proto__`, `constructor` or `prototype` at any depth (`forbidden-key`):
 *   a naive deep merge in a tool would otherwise write `Object.prototype`;
 * - holds a number literal that JSON's doubles cannot read as written (`inexact-number`: an
 *   integer literal no double holds exactly, such as `9007199254740993`, or a fraction read as an
 *   integer; see `literalChangesValue` in `./json-text`): the tool would act on a number the model
 *   did not write. Only literals are checked (JSON text, or the literals the caller found in the
 *   text a value was parsed from): a parsed double is exactly the number it holds (`1e21` passes);
 * - repeats a member name in one object (`duplicate-key`, text only: `JSON.parse` keeps the last);
 * - exceeds `maxBytes` UTF-8 bytes as text or as canonical JSON (RFC 8785), or the depth (32) and
 *   value-count (10,000) bounds of docs/protocol.md#bounds (`too-large`).
 */
import canonicalize from 'canonicalize';
import { assertJsonValue, LIMITS, resolveMaxToolInputBytes, utf8ByteLength } from './bounds';
import { CheckpointError, isCheckpointError } from './errors';
import { maxNestingDepth, scanJsonText, type JsonTextFinding } from './json-text';
import type { JsonValue } from './types';

/** Member names refused at every depth of model-supplied input. */
export const FORBIDDEN_INPUT_KEYS: readonly string[] = Object.freeze(['__proto__', 'constructor', 'prototype']);

/** Why a tool input was refused (`details.reason` of INVALID_TOOL_INPUT); see the module comment. */
export const TOOL_INPUT_REFUSALS = ['not-json', 'not-object', 'forbidden-key', 'duplicate-key', 'inexact-number', 'too-large'] as const;
export type ToolInputRefusal = (typeof TOOL_INPUT_REFUSALS)[number];

/** A refused tool input: why, where (`$.a.b[0]`, model-chosen keys cut to 64 characters) and a sentence for the model. */
export interface ToolInputProblem {
  readonly reason: ToolInputRefusal;
  readonly path: string;
  readonly message: string;
}

/** A JSON object as tool input. */
export type JsonObject = { [key: string]: JsonValue };

/** Options of the checks. */
export interface ToolInputCheckOptions {
  /** UTF-8 bytes of the input (as text, and as canonical JSON). @default LIMITS.defaultMaxToolInputBytes (65,536) */
  readonly maxBytes?: number;
  /**
   * The inexact number literals (`scanJsonText(text, { numbers: true })`) of the text the value
   * was parsed from, paths relative to the value (`$.amount`); the first is refused. @default none
   */
  readonly inexactNumbers?: readonly InexactNumber[];
  /**
   * The repeated member names (`scanJsonText`) of the text the value was parsed from, paths of
   * their objects relative to the value (`$`, `$.items[0]`); the first is refused. @default none
   */
  readonly duplicateKeys?: readonly DuplicateKey[];
}

/** A member name that appears more than once in the object at `path` (`JSON.parse` keeps the last). */
export interface DuplicateKey {
  readonly key: string;
  readonly path: string;
}

/** A number literal `JSON.parse` changed: the raw token and where (`$.a[0]`). */
export interface InexactNumber {
  readonly token: string;
  readonly path: string;
}

const FORBIDDEN = new Set(FORBIDDEN_INPUT_KEYS);
const MAX_PATH_LENGTH = 200;

/**
 * Checks a tool input that is already a value (an Anthropic `tool_use.input`, an activity's
 * `input`). Walks iteratively after the depth bound is checked.
 *
 * @returns null when acceptable, else the first problem found.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad `maxBytes` (the caller's bug, not the model's).
 */
export function checkToolInputValue(value: unknown, options: ToolInputCheckOptions = {}): ToolInputProblem | null {
  const checked = checkToolInput(value, options);
  return typeof checked === 'string' ? null : checked;
}

/**
 * Asserts an acceptable tool input value (see {@link checkToolInputValue}) and returns its RFC
 * 8785 canonical JSON, computed once for the size check and the input fingerprint.
 *
 * @param what names the call in the message, e.g. `create_ticket call "toolu_1"`.
 * @throws {@link CheckpointError} INVALID_TOOL_INPUT with `details.reason` (a {@link ToolInputRefusal}) and `details.path`.
 */
export function canonicalToolInput(value: unknown, what: string, options: ToolInputCheckOptions = {}): string {
  const checked = checkToolInput(value, options);
  if (typeof checked !== 'string') throw toolInputError(checked, what);
  return checked;
}

/** The canonical JSON of an acceptable tool input, or the first problem found. */
function checkToolInput(value: unknown, options: ToolInputCheckOptions): ToolInputProblem | string {
  const maxBytes = resolveMaxToolInputBytes(options.maxBytes);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return problem('not-object', '$', `tool input must be a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  }
  try {
    assertJsonValue(value, 'tool input');
  } catch (error) {
    if (!isCheckpointError(error)) throw error;
    const path = typeof error.details.path === 'string' ? error.details.path : '$';
    return problem(error.code === 'PAYLOAD_TOO_LARGE' ? 'too-large' : 'not-json', path, error.message);
  }
  // assertJsonValue bounded depth and count and proved plain, acyclic objects.
  const stack: Array<{ v: JsonValue; path: string }> = [{ v: value as JsonValue, path: '$' }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (Array.isArray(v)) {
      v.forEach((child, i) => stack.push({ v: child, path: `${path}[${i}]` }));
    } else if (typeof v === 'object' && v !== null) {
      for (const key of Object.keys(v)) {
        const at = `${path}${segment(key)}`;
        if (FORBIDDEN.has(key))
          return problem(
            'forbidden-key',
            at,
            `member name ${JSON.stringify(key)} at ${cut(at)} is not allowed in tool input (refused at any depth: ${FORBIDDEN_INPUT_KEYS.join(', ')})`,
          );
        stack.push({ v: v[key] as JsonValue, path: at });
      }
    }
  }
  const canonical = canonicalize(value) as string;
  const bytes = utf8ByteLength(canonical);
  if (bytes > maxBytes) return problem('too-large', '$', `tool input is ${bytes} bytes as canonical JSON, over the limit of ${maxBytes}`);
  const [duplicate] = options.duplicateKeys ?? [];
  if (duplicate !== undefined)
    return problem('duplicate-key', duplicate.path, `member name ${JSON.stringify(cut(duplicate.key))} appears more than once in the object at ${cut(duplicate.path)}`);
  const [inexact] = options.inexactNumbers ?? [];
  return inexact === undefined ? canonical : inexactNumber(inexact);
}

/**
 * Parses a tool input sent as JSON text (OpenAI `function.arguments`): the text's byte size,
 * syntax, nesting, duplicate member names and number literals, then
 * {@link checkToolInputValue} on the parsed value.
 *
 * @returns the parsed object, or the first problem found.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad `maxBytes`.
 */
export function parseToolInputText(text: string, options: ToolInputCheckOptions = {}): { ok: true; value: JsonObject } | { ok: false; problem: ToolInputProblem } {
  const maxBytes = resolveMaxToolInputBytes(options.maxBytes);
  const refuse = (p: ToolInputProblem): { ok: false; problem: ToolInputProblem } => ({ ok: false, problem: p });
  // Before parsing anything. UTF-8 bytes are never fewer than UTF-16 code units.
  if (text.length > maxBytes || utf8ByteLength(text) > maxBytes) {
    return refuse(problem('too-large', '$', `tool input text is ${utf8ByteLength(text)} bytes, over the limit of ${maxBytes}`));
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return refuse(problem('not-json', '$', `tool input is not valid JSON: ${(error as Error).message}`));
  }
  const depth = maxNestingDepth(text);
  if (depth > LIMITS.maxDepth) return refuse(problem('too-large', '$', `tool input nests ${depth} levels, deeper than ${LIMITS.maxDepth}`));
  const found = checkToolInputValue(value, { maxBytes, ...textChecks(scanJsonText(text, { numbers: true })) });
  return found === null ? { ok: true, value: value as JsonObject } : refuse(found);
}

/** The findings of a text scan (`scanJsonText`) as the options of {@link checkToolInputValue}. */
export function textChecks(findings: readonly JsonTextFinding[]): { duplicateKeys: DuplicateKey[]; inexactNumbers: InexactNumber[] } {
  return {
    duplicateKeys: findings.flatMap((f) => (f.kind === 'duplicate-key' ? [{ key: f.key, path: f.path }] : [])),
    inexactNumbers: findings.flatMap((f) => (f.kind === 'inexact-number' ? [{ token: f.token, path: f.path }] : [])),
  };
}

/**
 * Asserts an acceptable tool input value (see {@link checkToolInputValue}); the activity boundary.
 *
 * @param what names the call in the message, e.g. `create_ticket call "toolu_1"`.
 * @throws {@link CheckpointError} INVALID_TOOL_INPUT with `details.reason` (a {@link ToolInputRefusal}) and `details.path`.
 */
export function assertToolInput(value: unknown, what: string, options: ToolInputCheckOptions = {}): asserts value is JsonObject {
  const found = checkToolInputValue(value, options);
  if (found !== null) throw toolInputError(found, what);
}

/** The INVALID_TOOL_INPUT error of a refused input: `<what>: <problem>`, details `reason` and `path`. */
export function toolInputError(found: ToolInputProblem, what: string, details: Record<string, string | number | null> = {}): CheckpointError {
  return new CheckpointError('INVALID_TOOL_INPUT', `${what}: input refused (${found.reason}): ${found.message}`, { ...details, reason: found.reason, path: found.path });
}

function inexactNumber({ token, path }: InexactNumber): ToolInputProblem {
  return problem('inexact-number', path, `number ${cut(token)} at ${cut(path)} would be read as ${Number(token)}, not as written (JSON numbers are doubles); send it as a string`);
}

function problem(reason: ToolInputRefusal, path: string, message: string): ToolInputProblem {
  return { reason, path: cut(path), message };
}

/** `.key` for identifier-like keys, else `["key"]`; keys cut to 64 characters. */
function segment(key: string): string {
  const shown = key.length > 64 ? `${key.slice(0, 63).toWellFormed()}…` : key;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(shown) ? `.${shown}` : `[${JSON.stringify(shown)}]`;
}

function cut(text: string): string {
  return text.length > MAX_PATH_LENGTH ? `${text.slice(0, MAX_PATH_LENGTH - 1).toWellFormed()}…` : text;
}
