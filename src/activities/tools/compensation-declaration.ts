/**
 * How a tool declares the compensation of its applied effect (a saga step: the order example's
 * "reserve inventory → charge payment → create shipment"; compensation is a semantically
 * opposite action, not a rollback): another tool of the same worker, or a function with its own
 * revision. Either way it runs fenced, under its own checkpoint and an idempotency key derived
 * from the original call's, with the same lookup / key dedupe / pause rules as any call (see
 * `../fence/compensation-call` and the activity contract in `../contract/compensation-contract`).
 */
import { assertIdentifier } from '../../checkpoint/bounds';
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { LookupResult, ToolContext, ToolSuccess } from '../contract/tool-types';

/**
 * What a compensation is given, read from the ORIGINAL call's checkpoint in the store (never from
 * workflow history): the original call's validated arguments (its model input through the tool's
 * schema, as `execute` received them; the checkpoint's input fingerprint proves they are the
 * call's), the stored output and receipt (null when the tool returned none).
 */
export interface AppliedEffect {
  readonly args: JsonValue;
  readonly output: JsonValue;
  readonly receipt: JsonValue;
}

/**
 * Compensation by another tool of the worker: `input` maps the applied effect to that tool's
 * model input, which the named tool's schema validates (INVALID_TOOL_INPUT when it does not fit:
 * nothing runs). The compensation runs as that tool (its revision, `lookup`, `dedupesByKey`,
 * `callDeadlineMs`) under the compensation's own binding and key.
 */
export interface CompensationByTool {
  /** Name of a tool registered on the same worker (`createToolActivities` refuses a missing one). */
  readonly tool: string;
  /** Pure and deterministic: every attempt must compute the same input (its fingerprint is in the binding). */
  input(applied: AppliedEffect): JsonValue;
}

/**
 * Compensation by a function with its own revision. It runs as the pseudo-tool
 * `<tool>~compensation` with this `revision` (part of its binding, key and intent, like a tool's).
 */
export interface CompensationByFunction {
  /** Bump when the compensation's meaning changes. A non-empty identifier of at most 128 characters. */
  readonly revision: string;
  /** Undoes the effect; send `ctx.idempotencyKey` (the compensation's `ttcc-…` key) to the provider. Errors are classified by `kind` as a tool's. */
  execute(applied: AppliedEffect, ctx: ToolContext): Promise<ToolSuccess>;
  /** Finds an earlier compensation by `ctx.idempotencyKey`, proving presence or absence. */
  lookup?(ctx: ToolContext): Promise<LookupResult>;
  /** True when the provider deduplicates by idempotency key. Requires `keyRetentionMs`. @default false */
  readonly dedupesByKey?: boolean;
  /** How long the provider remembers a key, ms (a positive integer). Required with `dedupesByKey`. */
  readonly keyRetentionMs?: number;
  /** Deadline of one compensation call from its claim, ms (a positive integer). @default the original tool's `callDeadlineMs` */
  readonly callDeadlineMs?: number;
}

/** A tool's `compensation`. */
export type ToolCompensation = CompensationByTool | CompensationByFunction;

/** A {@link CompensationByFunction} as {@link normalizeCompensation} returns it: methods bound, `dedupesByKey` definite. */
export type NormalizedCompensationByFunction = CompensationByFunction & { readonly dedupesByKey: boolean };

/** Whether `compensation` is the tool form. */
export function isCompensationByTool(compensation: ToolCompensation): compensation is CompensationByTool {
  return typeof (compensation as { tool?: unknown }).tool === 'string';
}

/** The pseudo-tool name a function compensation of `toolName` runs (and is checkpointed) under. */
export function compensationToolName(toolName: string): string {
  return `${toolName}~compensation`;
}

/**
 * Checks a tool's `compensation` field and returns it frozen (undefined when absent), methods
 * bound to the declaration. Only own fields of the declaration are read for the tool form's
 * `tool`, so a polluted `Object.prototype` cannot turn a function form into a tool form.
 *
 * - Tool form `{ tool, input }`: `tool` an identifier (at most 128 characters), `input` a function.
 *   Whether the tool exists is checked by {@link assertCompensationToolsRegistered}.
 * - Function form `{ revision, execute, lookup?, dedupesByKey?, keyRetentionMs?, callDeadlineMs? }`:
 *   checked as `defineTool` checks the same fields of a tool.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `compensation` or
 *   `compensation.<field>`) for a value that is neither form, a bad tool name or revision, a
 *   method that is not a function, a flag that is not a boolean, a duration that is not a
 *   positive integer (ms), `dedupesByKey` without `keyRetentionMs`, or both forms at once.
 */
export function normalizeCompensation(toolName: string, value: unknown): ToolCompensation | undefined {
  if (value === undefined) return undefined;
  const bad = (field: string, what: string): CheckpointError =>
    new CheckpointError('INVALID_ARGUMENT', `tool ${toolName}: compensation${field === '' ? '' : `.${field}`} ${what}`, {
      field: field === '' ? 'compensation' : `compensation.${field}`,
      toolName,
    });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('', 'must be { tool, input } or { revision, execute }');
  const v = value as Record<string, unknown>;
  const own = (key: string): unknown => declaredField(value, key);
  const hasTool = own('tool') !== undefined;
  const hasFunction = own('revision') !== undefined || own('execute') !== undefined;
  if (hasTool && hasFunction) throw bad('', 'must be either { tool, input } or { revision, execute }, not both');
  if (hasTool) {
    const tool = own('tool');
    assertField(() => assertIdentifier(tool, 'toolName'), bad('tool', 'must be the name of a tool of this worker'));
    const input = own('input');
    if (typeof input !== 'function') throw bad('input', "must be a function input(applied) returning the tool's input");
    return Object.freeze({ tool: tool as string, input: input.bind(v) as CompensationByTool['input'] });
  }
  if (!hasFunction) throw bad('', 'must be { tool, input } or { revision, execute }');
  const revision = own('revision');
  assertField(() => assertIdentifier(revision, 'toolRevision'), bad('revision', 'must be a non-empty string of at most 128 characters without control characters'));
  const method = (key: 'execute' | 'lookup', required: boolean): ((...args: never[]) => unknown) | undefined => {
    const fn = own(key);
    if (fn === undefined && !required) return undefined;
    if (typeof fn !== 'function') throw bad(key, 'must be a function');
    return fn.bind(v) as (...args: never[]) => unknown;
  };
  const execute = method('execute', true);
  const lookup = method('lookup', false);
  const dedupesByKey = own('dedupesByKey') ?? false;
  if (typeof dedupesByKey !== 'boolean') throw bad('dedupesByKey', 'must be a boolean');
  const positiveMs = (key: 'keyRetentionMs' | 'callDeadlineMs'): number | undefined => {
    const ms = own(key);
    if (ms !== undefined && !(Number.isSafeInteger(ms) && (ms as number) > 0)) throw bad(key, 'must be a positive integer (ms)');
    return ms as number | undefined;
  };
  const keyRetentionMs = positiveMs('keyRetentionMs');
  const callDeadlineMs = positiveMs('callDeadlineMs');
  if (dedupesByKey && keyRetentionMs === undefined) throw bad('keyRetentionMs', 'is required with dedupesByKey: how long the provider remembers a key (e.g. 86,400,000 for 24 h)');
  const normalized: NormalizedCompensationByFunction = {
    revision: revision as string,
    execute: execute as CompensationByFunction['execute'],
    lookup: lookup as CompensationByFunction['lookup'],
    dedupesByKey,
    keyRetentionMs,
    callDeadlineMs,
  };
  return Object.freeze(normalized);
}

/**
 * Refuses a worker whose tool declares a compensation by a tool the worker does not have (checked
 * when the activities are built, so a saga never finds out at compensation time).
 *
 * @param tools the worker's tools by name
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `compensation.tool`,
 *   `details.toolName`, `details.compensationTool`) naming both tools.
 */
export function assertCompensationToolsRegistered(tools: ReadonlyMap<string, { readonly compensation?: ToolCompensation }>): void {
  for (const [name, tool] of tools) {
    const compensation = tool.compensation;
    if (compensation === undefined || !isCompensationByTool(compensation) || tools.has(compensation.tool)) continue;
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `tool ${name}: its compensation names tool ${JSON.stringify(compensation.tool)}, which this worker does not have (register it in the same createToolActivities tools list)`,
      { field: 'compensation.tool', toolName: name, compensationTool: compensation.tool },
    );
  }
}

/** `key` of `value` from the object or a prototype of its own (a class instance), never from `Object.prototype`. */
function declaredField(value: object, key: string): unknown {
  for (let o: object | null = value; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    if (Object.hasOwn(o, key)) return Reflect.get(o, key, value);
  }
  return undefined;
}

/** Runs `check`, replacing its INVALID_ARGUMENT with `error` (which names the compensation's field). */
function assertField(check: () => void, error: CheckpointError): void {
  try {
    check();
  } catch {
    throw error;
  }
}
