/**
 * Declaring a tool once (docs/protocol.md#the-fenced-attempt): name, revision, input schema,
 * execute, and the optional means of reconciliation (`lookup`, `dedupesByKey`).
 */
import { zodSchemaRefusal } from './zod-schema';
import type { z } from 'zod/v4';
import { assertIdentifier } from '../../checkpoint/bounds';
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import { isReservedActivityName, RESERVED_ACTIVITY_NAMES } from '../contract/contract';
import type { ToolErrorClass, ToolErrorKind } from '../contract/error-classes';
import { normalizeCompensation, type ToolCompensation } from './compensation-declaration';
import type { LookupResult, ToolContext, ToolSuccess } from '../contract/tool-types';

export type { LookupResult, ToolContext, ToolSuccess } from '../contract/tool-types';
export type { ToolErrorKind } from '../contract/error-classes';

/** The error class stored for a {@link ToolError} that names none (see `TOOL_ERROR_CLASSES`). */
const DEFAULT_CLASS_OF_KIND: Readonly<Record<ToolErrorKind, ToolErrorClass>> = {
  transient: 'TRANSIENT_EXHAUSTED',
  rejected: 'BUSINESS_REJECTION',
  'unknown-outcome': 'OUTCOME_UNKNOWN',
};

/** An error a tool may throw to classify a failure; any error with a `kind` field works the same. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly kind: ToolErrorKind,
    message: string,
    /** Provider's Retry-After in ms, honoured as the next retry delay. */
    readonly retryAfterMs?: number,
    /** A short type for the error result the model sees: one of `TOOL_ERROR_CLASSES` (`../contract/error-classes`), e.g. `PERMISSION_DENIED`. */
    readonly type: string = DEFAULT_CLASS_OF_KIND[kind],
  ) {
    super(message);
  }
}

/** A tool declaration. `I` is the validated input type. */
export interface ToolDefinition<I = unknown> {
  readonly name: string;
  /** Bump when the tool's meaning changes; part of the binding, the key and the intent. */
  readonly revision: string;
  readonly description?: string;
  /** zod schema; input is validated before any checkpoint is written. */
  readonly input: z.ZodType<I>;
  /**
   * Performs the effect. Gets the validated input as the approver reads it: a frozen copy of
   * its RFC 8785 canonical JSON parsed back (members in canonical order, `-0` as `0`), the value
   * the intent digest covers. The schema's output must be JSON.
   */
  execute(input: Readonly<I>, ctx: ToolContext): Promise<ToolSuccess>;
  /** Finds an earlier effect by `ctx.idempotencyKey`, proving presence or absence. */
  lookup?(ctx: ToolContext): Promise<LookupResult>;
  /**
   * True when `lookup` also finds the effects of this tool's earlier revisions: asked with the
   * idempotency key an earlier revision's attempt sent (`ctx.idempotencyKey`), it finds that
   * effect. Then a call claimed under an earlier revision and left unfinished (a worker lost
   * right after the effect, a deploy changed `revision` before the next attempt) is reconciled by
   * this revision's `lookup` once the claim's settle time has passed: a find settles the call
   * with the effect's output (stored under the earlier revision, `source: 'lookup'`); no find, or
   * without this flag, the call pauses for a person (OUTCOME_UNKNOWN). Requires `lookup`; not
   * with `batch`. @default false
   */
  readonly lookupFindsEarlierRevisions?: boolean;
  /** True when the provider deduplicates by idempotency key, so repeating with the same key is safe. Requires `keyRetentionMs`. */
  readonly dedupesByKey?: boolean;
  /**
   * How long the provider remembers an idempotency key, ms (Stripe: 24 h). Required with
   * `dedupesByKey`. A same-key repeat is a reconciliation only while it would settle (now +
   * `callDeadlineMs` + the reconcile margin) before the call's checkpoint is this old; after that
   * the fence looks up or pauses (docs/protocol.md#key-lifetime).
   */
  readonly keyRetentionMs?: number;
  /**
   * True when a call that means the same action as another call of the run chain (the same intent
   * digest: tool, revision, validated arguments, target) under a new tool-call id must be answered
   * from that call's checkpoint, under its idempotency key, instead of applying the effect again;
   * also when the two run at the same time (docs/protocol.md#dedupe-keys).
   * @default false
   * @see FencedToolInput.intentGeneration
   */
  readonly dedupeByIntent?: boolean;
  /**
   * The business action a call performs, from its validated arguments (e.g. `(input) =>
   * input.orderId`): within {@link businessKeyWindowMs} of the first call with a key, every call of
   * this tool with the same key in the same tenant, from any run, is answered from the first call's
   * checkpoint (its result, or a pause while its outcome is unknown) and applies nothing; one with
   * other arguments is refused (IDEMPOTENCY_CONFLICT naming the first run). A non-empty string of at
   * most 1,024 characters, else INVALID_TOOL_INPUT. Not with `batch` or `dedupeByIntent`
   * (docs/protocol.md#business-keys).
   */
  businessKey?(input: Readonly<I>): string;
  /**
   * How long a business key holds from its first call's claim, ms. @default 86,400,000 (24 h,
   * as the IETF Idempotency-Key draft suggests for key expiry)
   */
  readonly businessKeyWindowMs?: number;
  /** What the effect acts on, for the intent digest (e.g. the mailbox or queue). @default null */
  target?(input: Readonly<I>): JsonValue;
  /**
   * True when the tool's effects are its items: every effect goes through `ctx.forEachItem`,
   * each item under its own checkpoint, so `lookup` and `dedupesByKey` apply to each item (its
   * `ctx.idempotencyKey` and `ctx.item`), and a later attempt of the call resumes the batch
   * instead of reconciling the call as a whole. `callDeadlineMs` is then the deadline of one item.
   * @default false
   */
  readonly batch?: boolean;
  /**
   * How an applied effect of this tool is undone (a saga step): another tool of the worker, or a
   * function with its own revision; run fenced, under its own checkpoint and an idempotency key
   * derived from this call's (see `./compensation-declaration`).
   */
  readonly compensation?: ToolCompensation;
  /**
   * Deadline of one call from its claim, including in-attempt transient retries, ms. The fence
   * aborts `ctx.signal` and stops waiting at the deadline; another attempt may take an unfinished
   * claim over only after `claimedAt + callDeadlineMs + reconcileMarginMs`, so this also sets how
   * long recovery waits after a crash (docs/protocol.md#overlapping-attempts). @default 30,000
   */
  readonly callDeadlineMs?: number;
}

/** Tool names the model APIs accept (Anthropic and OpenAI function names). */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A tool as {@link defineTool} returns it: frozen, every field of {@link ToolDefinition} an own
 * property (absent optional ones own and `undefined`), the flags with definite values. Nothing
 * the fence reads from a tool comes through `Object.prototype`.
 */
export type DefinedTool<I = unknown> = ToolDefinition<I> & {
  readonly dedupesByKey: boolean;
  readonly lookupFindsEarlierRevisions: boolean;
  readonly dedupeByIntent: boolean;
  readonly callDeadlineMs: number;
  readonly batch: boolean;
  /** Set exactly when `businessKey` is. */
  readonly businessKeyWindowMs: number | undefined;
};

/**
 * Checks a tool declaration and returns it normalised (see {@link DefinedTool}): flags
 * `dedupesByKey` and `dedupeByIntent` default to false, `callDeadlineMs` to
 * {@link DEFAULT_CALL_DEADLINE_MS}; `execute`, `lookup` and `target` are bound to the declaration.
 * Fields are read from the declaration and its own prototypes (a class instance works), never
 * from `Object.prototype`, so a polluted prototype cannot set a flag. Other own fields are kept
 * as they are. Idempotent: `createToolActivities` applies it to every tool it is given.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad name (see {@link TOOL_NAME_PATTERN}),
 *   a name reserved for the agent's own activities (`RESERVED_ACTIVITY_NAMES`, details.reason
 *   `reserved-activity-name`: each tool is registered as an activity of its name), a bad revision, a missing schema or execute, a flag of the wrong type, `dedupesByKey` without
 *   `keyRetentionMs`, `lookupFindsEarlierRevisions` without `lookup` or with `batch`.
 */
export function defineTool<I>(tool: ToolDefinition<I>): DefinedTool<I> {
  if (typeof tool !== 'object' || tool === null) throw new CheckpointError('INVALID_ARGUMENT', 'a tool must be an object made with defineTool', { field: 'tool' });
  const field = (key: keyof ToolDefinition<I>): unknown => declared(tool, key);
  const name = field('name');
  assertIdentifier(name, 'toolName');
  if (!TOOL_NAME_PATTERN.test(name)) {
    throw new CheckpointError('INVALID_ARGUMENT', `tool name ${JSON.stringify(name)} must match ${TOOL_NAME_PATTERN} (what the Anthropic and OpenAI tool APIs accept)`, {
      field: 'toolName',
      actual: name,
    });
  }
  if (isReservedActivityName(name)) {
    // Each tool is its own activity type, named after the tool.
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `tool name ${JSON.stringify(name)} is reserved: the tool's activity would collide with the agent's own activity of that name (reserved: ${RESERVED_ACTIVITY_NAMES.join(', ')})`,
      { field: 'toolName', actual: name, reason: 'reserved-activity-name' },
    );
  }
  const revision = field('revision');
  assertIdentifier(revision, 'toolRevision');
  const bad = (key: string, what: string): CheckpointError => new CheckpointError('INVALID_ARGUMENT', `tool ${name}: ${key} ${what}`, { field: key });
  const input = field('input');
  const inputRefusal = zodSchemaRefusal(input);
  if (inputRefusal !== undefined) throw bad('input', inputRefusal);
  const method = (key: 'execute' | 'lookup' | 'target' | 'businessKey', required: boolean): ((...args: never[]) => unknown) | undefined => {
    const fn = field(key);
    if (fn === undefined && !required) return undefined;
    if (typeof fn !== 'function') throw bad(key, 'must be a function');
    return fn.bind(tool) as (...args: never[]) => unknown;
  };
  const execute = method('execute', true);
  const lookup = method('lookup', false);
  const target = method('target', false);
  const businessKey = method('businessKey', false);
  const description = field('description');
  if (description !== undefined && typeof description !== 'string') throw bad('description', 'must be a string');
  const dedupeByIntent = field('dedupeByIntent') ?? false;
  if (typeof dedupeByIntent !== 'boolean') throw bad('dedupeByIntent', 'must be a boolean');
  const callDeadlineMs = field('callDeadlineMs') ?? DEFAULT_CALL_DEADLINE_MS;
  if (!(Number.isSafeInteger(callDeadlineMs) && (callDeadlineMs as number) > 0)) throw bad('callDeadlineMs', 'must be a positive integer');
  const dedupesByKey = field('dedupesByKey') ?? false;
  if (typeof dedupesByKey !== 'boolean') throw bad('dedupesByKey', 'must be a boolean');
  const keyRetentionMs = field('keyRetentionMs');
  if (keyRetentionMs !== undefined && !(Number.isSafeInteger(keyRetentionMs) && (keyRetentionMs as number) > 0)) throw bad('keyRetentionMs', 'must be a positive integer (ms)');
  const batch = field('batch') ?? false;
  if (typeof batch !== 'boolean') throw bad('batch', 'must be a boolean');
  if (batch && dedupeByIntent) throw bad('batch', 'cannot be combined with dedupeByIntent');
  const businessKeyWindowMs = businessKeyWindow(field('businessKeyWindowMs'), businessKey !== undefined, bad);
  if (businessKey !== undefined && (batch || dedupeByIntent)) throw bad('businessKey', `cannot be combined with ${batch ? 'batch' : 'dedupeByIntent'}`);
  const lookupFindsEarlierRevisions = field('lookupFindsEarlierRevisions') ?? false;
  if (typeof lookupFindsEarlierRevisions !== 'boolean') throw bad('lookupFindsEarlierRevisions', 'must be a boolean');
  if (lookupFindsEarlierRevisions && lookup === undefined) throw bad('lookupFindsEarlierRevisions', 'needs a lookup: it says what the lookup finds');
  if (lookupFindsEarlierRevisions && batch) throw bad('lookupFindsEarlierRevisions', 'cannot be combined with batch (each item is looked up under its own key)');
  const compensation = normalizeCompensation(name, field('compensation'));
  if (dedupesByKey && keyRetentionMs === undefined) {
    throw bad('keyRetentionMs', 'is required with dedupesByKey: how long the provider remembers a key (e.g. 86,400,000 for 24 h)');
  }
  return Object.freeze({
    ...tool,
    name,
    revision,
    description: description as string | undefined,
    input: input as z.ZodType<I>,
    execute: execute as ToolDefinition<I>['execute'],
    lookup: lookup as ToolDefinition<I>['lookup'],
    target: target as ToolDefinition<I>['target'],
    businessKey: businessKey as ToolDefinition<I>['businessKey'],
    businessKeyWindowMs,
    dedupesByKey,
    lookupFindsEarlierRevisions,
    keyRetentionMs: keyRetentionMs as number | undefined,
    dedupeByIntent,
    callDeadlineMs: callDeadlineMs as number,
    batch,
    compensation,
  });
}

/** Default of `businessKeyWindowMs`, ms: 24 h. */
export const DEFAULT_BUSINESS_KEY_WINDOW_MS = 86_400_000;
/** Largest `businessKeyWindowMs`, ms: 366 days. */
export const MAX_BUSINESS_KEY_WINDOW_MS = 366 * 86_400_000;

/** `businessKeyWindowMs` checked: only with a `businessKey`, a positive integer up to {@link MAX_BUSINESS_KEY_WINDOW_MS}. */
function businessKeyWindow(value: unknown, keyed: boolean, bad: (key: string, what: string) => CheckpointError): number | undefined {
  if (!keyed) {
    if (value !== undefined) throw bad('businessKeyWindowMs', 'needs a businessKey');
    return undefined;
  }
  if (value === undefined) return DEFAULT_BUSINESS_KEY_WINDOW_MS;
  if (!(Number.isSafeInteger(value) && (value as number) > 0 && (value as number) <= MAX_BUSINESS_KEY_WINDOW_MS)) {
    throw bad('businessKeyWindowMs', `must be a positive integer (ms) of at most ${MAX_BUSINESS_KEY_WINDOW_MS.toLocaleString('en-US')}`);
  }
  return value as number;
}

/** `key` of `tool` from the object or a prototype of its own (a class), never from `Object.prototype`. */
function declared(tool: object, key: string): unknown {
  for (let o: object | null = tool; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    if (Object.hasOwn(o, key)) return Reflect.get(o, key, tool);
  }
  return undefined;
}

/** The classification of a thrown tool error (`kind`, else `unknown-outcome`). */
export function toolErrorKind(error: unknown): ToolErrorKind {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return kind === 'transient' || kind === 'rejected' || kind === 'unknown-outcome' ? kind : 'unknown-outcome';
}

/** Default `callDeadlineMs`: 30,000 ms. */
export const DEFAULT_CALL_DEADLINE_MS = 30_000;
