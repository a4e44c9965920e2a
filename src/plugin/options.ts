/**
 * Options of {@link ToolCheckpointPlugin} (`./tool-checkpoint-plugin`) and their validation.
 * @experimental while `@temporalio/plugin` is.
 */
import { assertGrantKeys } from '../activities/fence/approval-grants';
import { zodSchemaRefusal } from '../activities/tools/zod-schema';
import { z } from 'zod/v4';
import { DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS } from '../activities/contract/contract';
import { resolveMaxPayloadBytes } from '../checkpoint/bounds';
import { CheckpointError } from '../checkpoint/errors';
import { assertIdempotencyKeySecret } from '../checkpoint/digest';
import type { ToolActivitiesOptions } from '../activities';
import { defineTool, type LookupResult, type ToolContext, type ToolDefinition, type ToolErrorKind } from '../activities/tools/define-tool';
import type { CheckpointStore } from '../stores/checkpoint-store';
import { defaultClassifyError, type ErrorClassifier } from './error-classification';

/**
 * What a fenced activity's `lookup` receives: the call's {@link ToolContext} (idempotency key,
 * intent digest, call id, workflow id, abort signal, heartbeat) and the activity's arguments.
 */
export interface FencedLookupContext extends ToolContext {
  /**
   * The arguments the activity was called with, in order, as the worker decoded them: the values
   * the activity function itself receives (the same on every attempt of the call; the intent
   * digest covers them as JSON). A frozen array; treat the values as read-only.
   */
  readonly args: readonly unknown[];
}

/** How an activity the worker already registers is fenced (by its activity type name). */
export interface FencedActivityOptions {
  /** Bump when the activity's meaning changes; part of the binding, the idempotency key and the intent. */
  readonly revision: string;
  /**
   * Finds an earlier attempt's effect: by `ctx.idempotencyKey` (the key the activity sent, see
   * `fencedCallContext()`), or by the activity's own arguments in `ctx.args` (an order id, say),
   * for a provider that cannot search by key. Lets a retry after a crash settle the call instead
   * of pausing. Answers `{ found: true, output }` (the activity's result as the workflow should
   * receive it) or `{ found: false }` (proof of absence); a throw or any other answer proves
   * nothing and the attempt fails RECONCILE_PENDING.
   */
  lookup?(ctx: FencedLookupContext): Promise<LookupResult>;
  /**
   * True when `lookup` also finds effects of the activity's earlier revisions, by the idempotency
   * key an earlier revision's attempt sent: a claim left unfinished under an earlier `revision` is
   * then reconciled by this revision's `lookup` after its settle time, instead of pausing (see
   * `ToolDefinition.lookupFindsEarlierRevisions`). Requires `lookup`. @default false
   */
  readonly lookupFindsEarlierRevisions?: boolean;
  /** True when the provider deduplicates by idempotency key (requires `keyRetentionMs`). @default false */
  readonly dedupesByKey?: boolean;
  /** How long the provider remembers a key, ms. Required with `dedupesByKey`. */
  readonly keyRetentionMs?: number;
  /** Deadline of one call from its claim, ms (see `ToolDefinition.callDeadlineMs`). @default 30,000 */
  readonly callDeadlineMs?: number;
  /**
   * zod schema of the activity's argument array. The fence checkpoints `{ args }` (what the
   * fingerprint and intent cover); the arguments must be JSON. @default any JSON array, as is
   */
  readonly input?: z.ZodType<unknown>;
  /**
   * How an error the activity throws is classified (docs/protocol.md#the-fenced-attempt): called once
   * with the error as thrown, after the activity ran under this attempt's claim.
   * - `rejected`: the call's final error result. It is stored (`{ ok: false, error: { type,
   *   message } }`, type: the error's `type`, else the name of an `Error` subclass that sets one,
   *   else `BUSINESS_REJECTION`) and every attempt of the call, this one and any later, fails
   *   with a non-retryable `ApplicationFailure` of that type and message (its `details`, `cause`
   *   and `category` are not stored). The activity never runs again for this call.
   * - `unknown-outcome`: the effect may have been applied. The call is reconciled by `lookup`, or
   *   repeated with the same key when `dedupesByKey`, on a later attempt; without either it
   *   pauses (OUTCOME_UNKNOWN, see the plugin's `onUnknownOutcome`).
   * - `transient`: the call was not applied. The fence calls the activity at most once per
   *   attempt: the attempt gives its claim back (the checkpoint is `ready` again) and fails
   *   retryably (`RECONCILE_PENDING`, cause `TRANSIENT_EXHAUSTED`), and Temporal's next attempt
   *   runs the activity again under the same idempotency key. Only the last attempt
   *   (`maximumAttempts`, or the schedule-to-close deadline) stores `TRANSIENT_EXHAUSTED` as the
   *   call's final result.
   *
   * A classifier that throws, or returns anything else, means `unknown-outcome`.
   * @default {@link defaultClassifyError}: an error's own `kind` (see `ToolError`) if it has one;
   *   an `ApplicationFailure` with `nonRetryable: true` is `rejected` (as unfenced, Temporal would
   *   fail it without a retry); anything else is `unknown-outcome`.
   */
  classifyError?(error: unknown): ToolErrorKind;
}

/**
 * Options of the tool checkpoint plugin. The pins (`pinnedTenants`, `pinnedTools`) apply to
 * `tools` per call, and to `fence` entries when the plugin is built: `pinnedTools` must pin every
 * `fence` entry and `pinnedTenants` must name `tenant` (`./fence-pins`). `requireApproval` may
 * also name `fence` entries, whose calls then run only inside `withApprovedIntent`
 * (`./approval-pins`). A fenced activity is checkpointed under `tenant`.
 */
export interface ToolCheckpointPluginOptions extends Pick<
  ToolActivitiesOptions,
  'reconcileMarginMs' | 'maxPayloadBytes' | 'idempotencyKeySecret' | 'approvalGrantKeys' | 'pinnedTenants' | 'pinnedTools' | 'requireApproval' | 'clock' | 'hooks'
> {
  /** Where checkpoints are kept; opened by the caller (the plugin does no I/O). */
  readonly store: CheckpointStore;
  /** `defineTool` tools: each is registered as an activity named by the tool and fenced. @default [] */
  readonly tools?: readonly ToolDefinition<any>[];
  /** Activities registered elsewhere (by the user or another plugin) to fence, by activity type. @default {} */
  readonly fence?: Readonly<Record<string, FencedActivityOptions>>;
  /** The tenant the checkpoints of fenced activities are kept under. @default 'default' */
  readonly tenant?: string;
  /**
   * What an attempt does when its call's outcome is unknown and cannot be settled here
   * (docs/protocol.md#worker-plugin last point): an earlier attempt may have applied the effect,
   * and neither `lookup` nor a same-key repeat (`dedupesByKey`) can tell, so only a person can.
   * Applies to every call this plugin fences: `fence` entries and `tools`.
   * - `'fail'`: the activity fails non-retryably with an `ApplicationFailure` of type
   *   `OUTCOME_UNKNOWN` whose `details[0]` names the call (`callId`, `toolName`,
   *   `idempotencyKey`, `intentDigest`, `reason`). Your workflow sees it at once and decides:
   *   catch it, wait for a signal, compensate, or fail. The default, because a pause is visible
   *   at once and nothing depends on a retry policy: under `'wait'` a `maximumAttempts` or a
   *   `scheduleToCloseTimeout` (the agent workflow bounds its activities by its deadline) later
   *   turns the wait into a failure anyway, quietly and long after the fact.
   * - `'wait'`: the attempt fails retryably (type `OUTCOME_UNKNOWN`, same details,
   *   `nextRetryDelay` = {@link unknownOutcomeRetryMs}) and writes nothing new. Every later
   *   attempt reads the checkpoint again: once a person has stored the call's outcome (the record
   *   is `completed`), the next attempt delivers it and the workflow continues as if the call had
   *   returned it; the activity is not run again. The activity's retry policy still applies:
   *   `maximumAttempts`, `scheduleToCloseTimeout`, and `OUTCOME_UNKNOWN` in
   *   `nonRetryableErrorTypes` end the wait with that failure. Meant for your own workflows,
   *   which have no `resolve` update; `agentWorkflow` has one and expects `'fail'`.
   * Other failures keep their retryability.
   * @default 'fail'
   */
  readonly onUnknownOutcome?: 'fail' | 'wait';
  /**
   * With `onUnknownOutcome: 'wait'`: the delay before the next attempt re-reads the checkpoint,
   * ms; a positive safe integer. Each attempt reads the store once and writes nothing.
   * @default 300,000 (5 minutes)
   */
  readonly unknownOutcomeRetryMs?: number;
  /**
   * The heartbeat timeout, ms, a fenced activity (a `fence` entry or one of `tools`) gets when the
   * workflow scheduled it without `heartbeatTimeout`; the fence heartbeats while it runs, so a
   * worker that dies is noticed within this time rather than the start-to-close timeout (see the
   * README's recovery time). Set by the plugin's workflow interceptor, so it applies to workflows
   * bundled with this plugin. `null`: none. A positive safe integer.
   * @default 10,000 (10 seconds)
   */
  readonly heartbeatTimeoutMs?: number | null;
}

/** Default `unknownOutcomeRetryMs`: 300,000 ms (5 minutes). */
export const DEFAULT_UNKNOWN_OUTCOME_RETRY_MS = 300_000;

/** The tenant a fenced activity is checkpointed under when the plugin names none (`ToolCheckpointPluginOptions.tenant`). */
export const DEFAULT_PLUGIN_TENANT = 'default';

/**
 * A fenced activity type, resolved: the tool shape the fence runs, with `execute` supplied per
 * call, and the entry's error classifier (bound to the entry; {@link defaultClassifyError} when it gives none).
 */
export type FencedActivity = Omit<ToolDefinition<unknown>, 'execute'> & { readonly classifyError: ErrorClassifier };

const NEVER = async (): Promise<never> => {
  throw new Error('unreachable: the fence interceptor supplies execute per call');
};

/**
 * Validates the `fence` option: each entry is checked as `defineTool` checks a tool (name
 * pattern, revision, flags).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad entry or a name also given in `tools`.
 */
export function resolveFencedActivities(options: ToolCheckpointPluginOptions): ReadonlyMap<string, FencedActivity> {
  const fenced = new Map<string, FencedActivity>();
  const toolNames = new Set((options.tools ?? []).map((t) => t.name));
  for (const [name, entry] of Object.entries(options.fence ?? {})) {
    if (toolNames.has(name)) throw new CheckpointError('INVALID_ARGUMENT', `${JSON.stringify(name)} is both a tool and a fenced activity; name it once`, { field: 'fence' });
    if (name.startsWith('__temporal_'))
      throw new CheckpointError('INVALID_ARGUMENT', `activity type ${JSON.stringify(name)} is reserved by Temporal and cannot be fenced`, { field: 'fence' });
    const inputRefusal = entry.input === undefined ? undefined : zodSchemaRefusal(entry.input);
    if (inputRefusal !== undefined) throw new CheckpointError('INVALID_ARGUMENT', `fenced activity ${name}: input ${inputRefusal}`, { field: 'input' });
    const {
      execute: _unused,
      classifyError: _declared,
      ...tool
    } = defineTool({ ...entry, name, input: z.strictObject({ args: entry.input ?? z.array(z.unknown()) }), execute: NEVER }) as ToolDefinition<unknown> & {
      classifyError?: unknown;
    };
    fenced.set(name, { ...tool, classifyError: classifierOf(name, entry) });
  }
  return fenced;
}

/** The entry's `classifyError`, bound to the entry (own or from its class, never from `Object.prototype`), or the default. @throws {@link CheckpointError} INVALID_ARGUMENT when it is not a function. */
function classifierOf(name: string, entry: FencedActivityOptions): ErrorClassifier {
  let declared: unknown;
  for (let o: object | null = entry; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    if (Object.hasOwn(o, 'classifyError')) {
      declared = Reflect.get(o, 'classifyError', entry);
      break;
    }
  }
  if (declared === undefined) return defaultClassifyError;
  if (typeof declared !== 'function')
    throw new CheckpointError('INVALID_ARGUMENT', `fence entry ${JSON.stringify(name)}: classifyError must be a function`, { field: 'classifyError' });
  return declared.bind(entry) as ErrorClassifier;
}

/** What the plugin's options decide about the fence interceptor beyond the `fence` entries: spread into its `FenceDeps`. */
export interface FenceSettings {
  /** The names of the plugin's `tools` (see `FenceDeps.toolNames`). */
  readonly toolNames: ReadonlySet<string>;
  /** `onUnknownOutcome`, resolved (see `FenceDeps.onUnknownOutcome`). */
  readonly onUnknownOutcome: 'fail' | 'wait';
  /** `unknownOutcomeRetryMs`, resolved, ms. */
  readonly unknownOutcomeRetryMs: number;
}

/** The {@link FenceSettings} of validated plugin options (see {@link validatePluginOptions}). */
export function resolveFenceSettings(options: ToolCheckpointPluginOptions): FenceSettings {
  return {
    toolNames: new Set((options.tools ?? []).map((tool) => tool.name)),
    onUnknownOutcome: (ownOption(options, 'onUnknownOutcome') as 'fail' | 'wait' | undefined) ?? 'fail',
    unknownOutcomeRetryMs: (ownOption(options, 'unknownOutcomeRetryMs') as number | undefined) ?? DEFAULT_UNKNOWN_OUTCOME_RETRY_MS,
  };
}

/** `heartbeatTimeoutMs`, validated (see {@link validatePluginOptions}) and resolved: ms, or null for none. Read as own option, as validated. */
export function resolveHeartbeatTimeoutMs(options: ToolCheckpointPluginOptions): number | null {
  const value = ownOption(options, 'heartbeatTimeoutMs') as number | null | undefined;
  return value === undefined ? DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS : value;
}

/** An option given on `options` itself, never read through a polluted `Object.prototype`. */
function ownOption(options: ToolCheckpointPluginOptions, key: keyof ToolCheckpointPluginOptions): unknown {
  return Object.hasOwn(options, key) ? options[key] : undefined;
}

/**
 * Checks the plugin-wide options (the tools are checked by `createToolActivities`).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` names the option): no store, a bad `tenant`,
 *   `maxPayloadBytes`, `idempotencyKeySecret` or `reconcileMarginMs`, an `onUnknownOutcome` other than
 *   `'fail'`/`'wait'`, an `unknownOutcomeRetryMs` that is not a positive safe integer.
 */
export function validatePluginOptions(options: ToolCheckpointPluginOptions): void {
  if (typeof options?.store?.createIfAbsent !== 'function')
    throw new CheckpointError('INVALID_ARGUMENT', 'ToolCheckpointPlugin needs a store (openCheckpointStore(url))', { field: 'store' });
  const tenant = options.tenant ?? DEFAULT_PLUGIN_TENANT;
  if (typeof tenant !== 'string' || tenant.length === 0 || tenant.length > 256)
    throw new CheckpointError('INVALID_ARGUMENT', 'tenant must be a non-empty string of at most 256 characters', { field: 'tenant' });
  resolveMaxPayloadBytes(options.maxPayloadBytes);
  if (options.idempotencyKeySecret !== undefined) assertIdempotencyKeySecret(options.idempotencyKeySecret);
  assertGrantKeys(options.approvalGrantKeys);
  const margin = options.reconcileMarginMs;
  if (margin !== undefined && !(Number.isSafeInteger(margin) && margin >= 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', `reconcileMarginMs must be a non-negative integer (ms), got ${String(margin)}`, { field: 'reconcileMarginMs' });
  }
  const onUnknownOutcome = ownOption(options, 'onUnknownOutcome');
  if (onUnknownOutcome !== undefined && onUnknownOutcome !== 'fail' && onUnknownOutcome !== 'wait') {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `onUnknownOutcome must be 'fail' or 'wait', got ${typeof onUnknownOutcome === 'string' ? JSON.stringify(onUnknownOutcome) : typeof onUnknownOutcome}`,
      { field: 'onUnknownOutcome' },
    );
  }
  const heartbeatMs = ownOption(options, 'heartbeatTimeoutMs');
  if (heartbeatMs !== undefined && heartbeatMs !== null && !(Number.isSafeInteger(heartbeatMs) && (heartbeatMs as number) > 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', `heartbeatTimeoutMs must be a positive integer (ms) or null, got ${String(heartbeatMs)}`, { field: 'heartbeatTimeoutMs' });
  }
  const retryMs = ownOption(options, 'unknownOutcomeRetryMs');
  if (retryMs !== undefined && !(Number.isSafeInteger(retryMs) && (retryMs as number) > 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', `unknownOutcomeRetryMs must be a positive integer (ms), got ${String(retryMs)}`, { field: 'unknownOutcomeRetryMs' });
  }
}
