/**
 * Validation of the agent workflow's input and the activity options derived from it (every
 * timeout bounded by the time left before the run deadline). Sandbox-safe, no clock.
 *
 * @see docs/protocol.md#agent-workflow, docs/protocol.md#bad-input
 */
import { ActivityCancellationType, ApplicationFailure, type ActivityOptions, type RetryPolicy } from '@temporalio/workflow';
import { DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS, isReservedActivityName, RESERVED_ACTIVITY_NAMES } from '../../activities/contract/contract';
import type { AgentActivityOptions, AgentWorkflowInput, ActivityRetryInput, RunLimits, ToolActivityOptions } from './types';

/** {@link RunLimits} with every default filled in. */
export const DEFAULT_LIMITS: Required<RunLimits> = {
  inlineResultMaxBytes: 4_096,
  continueAsNewAfterEvents: 10_000,
  continueAsNewAfterHistoryBytes: 10 * 1024 * 1024,
  continueAsNewAfterStateBytes: 1024 * 1024,
};

/** Default of `AgentBudget.maxConversationBytes`: 32 MiB. */
export const DEFAULT_MAX_CONVERSATION_BYTES = 32 * 1024 * 1024;

/** The run's limits: `input.limits` over {@link DEFAULT_LIMITS}, field by field. */
export function runLimits(input: AgentWorkflowInput): Required<RunLimits> {
  return { ...DEFAULT_LIMITS, ...input.limits };
}

/** Per-attempt activity timeout when the input gives none, ms. */
export const DEFAULT_START_TO_CLOSE_TIMEOUT_MS = 60_000;

/** Which activity an options object is for. */
export type ActivityKind = 'model' | 'tool' | 'describe' | 'resolve' | 'compensate';

/** Most error types `compensateOn` may name. */
export const MAX_COMPENSATE_ON_TYPES = 100;

/** Longest error type `compensateOn` may name, characters. */
export const MAX_COMPENSATE_ON_TYPE_LENGTH = 256;

/**
 * Checks the workflow input.
 *
 * @throws ApplicationFailure (non-retryable, type `INVALID_ARGUMENT`) naming the field, when a
 *   field is missing, empty or out of range; the run fails before any activity.
 */
export function validateAgentWorkflowInput(input: AgentWorkflowInput): void {
  if (typeof input !== 'object' || input === null) invalid('input', 'must be an object', input);
  nonEmptyString('tenant', input.tenant);
  nonEmptyString('model', input.model);
  if (typeof input.prompt !== 'string') invalid('prompt', 'must be a string', input.prompt);
  if (!Array.isArray(input.tools)) invalid('tools', 'must be an array of tool names', input.tools);
  input.tools.forEach((name, i) => nonEmptyString(`tools[${i}]`, name));
  if (typeof input.budget !== 'object' || input.budget === null) invalid('budget', 'must be an object', input.budget);
  positiveInteger('budget.maxTurns', input.budget.maxTurns);
  positiveInteger('budget.maxToolCalls', input.budget.maxToolCalls);
  positiveInteger('budget.deadlineMs', input.budget.deadlineMs);
  if (input.budget.maxConversationBytes !== undefined) positiveInteger('budget.maxConversationBytes', input.budget.maxConversationBytes);
  if (input.budget.maxToolCallsPerTurn !== undefined) positiveInteger('budget.maxToolCallsPerTurn', input.budget.maxToolCallsPerTurn);
  if (input.budget.maxToolInputBytesPerTurn !== undefined) positiveInteger('budget.maxToolInputBytesPerTurn', input.budget.maxToolInputBytesPerTurn);
  if (input.toolConcurrency !== undefined) positiveInteger('toolConcurrency', input.toolConcurrency);
  if (input.limits !== undefined) {
    if (typeof input.limits !== 'object' || input.limits === null) invalid('limits', 'must be an object', input.limits);
    for (const key of Object.keys(input.limits)) {
      if (!(key in DEFAULT_LIMITS)) invalid(`limits.${key}`, `is not a limit (limits: ${Object.keys(DEFAULT_LIMITS).join(', ')})`, key);
      positiveInteger(`limits.${key}`, (input.limits as Record<string, unknown>)[key]);
    }
  }
  for (const [tool, policy] of Object.entries(input.approvalRequired ?? {})) {
    positiveInteger(`approvalRequired.${tool}.expiresAfterMs`, policy?.expiresAfterMs);
  }
  if (input.compensateOn !== undefined) validateCompensateOn(input.compensateOn);
  input.tools.forEach((name, i) => {
    if (isReservedActivityName(name)) invalid(`tools[${i}]`, `must not be one of the agent's own activity names (${RESERVED_ACTIVITY_NAMES.join(', ')})`, name);
  });
  const opts = input.activityOptions;
  if (opts !== undefined) {
    if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) invalid('activityOptions', 'must be an object', opts);
    validateActivityOptions('activityOptions', opts);
    const perTool = opts.perTool ?? {};
    if (typeof perTool !== 'object' || perTool === null) invalid('activityOptions.perTool', 'must be an object keyed by tool name', perTool);
    for (const [tool, toolOptions] of Object.entries(perTool)) {
      if (!input.tools.includes(tool)) invalid(`activityOptions.perTool.${tool}`, `names a tool the run does not offer (tools: ${input.tools.join(', ')})`, tool);
      if (typeof toolOptions !== 'object' || toolOptions === null) invalid(`activityOptions.perTool.${tool}`, 'must be an object', toolOptions);
      validateActivityOptions(`activityOptions.perTool.${tool}`, toolOptions);
    }
  }
}

/** `compensateOn`: an array of at most {@link MAX_COMPENSATE_ON_TYPES} distinct non-empty error types of at most {@link MAX_COMPENSATE_ON_TYPE_LENGTH} characters. */
function validateCompensateOn(types: unknown): void {
  if (!Array.isArray(types)) invalid('compensateOn', 'must be an array of tool-result error types (e.g. ["BUSINESS_REJECTION"])', types);
  if (types.length > MAX_COMPENSATE_ON_TYPES) invalid('compensateOn', `must name at most ${MAX_COMPENSATE_ON_TYPES} error types`, types.length);
  types.forEach((type: unknown, i) => {
    if (typeof type !== 'string' || type.length === 0 || type.length > MAX_COMPENSATE_ON_TYPE_LENGTH) {
      invalid(`compensateOn[${i}]`, `must be a non-empty string of at most ${MAX_COMPENSATE_ON_TYPE_LENGTH} characters`, type);
    }
    if (types.indexOf(type) !== i) invalid(`compensateOn[${i}]`, `repeats ${JSON.stringify(type)} (compensateOn[${types.indexOf(type)}])`, type);
  });
}

function validateActivityOptions(field: string, opts: ToolActivityOptions): void {
  if (opts.startToCloseTimeoutMs !== undefined) positiveInteger(`${field}.startToCloseTimeoutMs`, opts.startToCloseTimeoutMs);
  if (opts.heartbeatTimeoutMs !== undefined && opts.heartbeatTimeoutMs !== null) positiveInteger(`${field}.heartbeatTimeoutMs`, opts.heartbeatTimeoutMs, 'or null for none');
  const retry = opts.retry;
  if (retry !== undefined && (typeof retry !== 'object' || retry === null || Array.isArray(retry))) invalid(`${field}.retry`, 'must be an object', retry);
  if (retry?.initialIntervalMs !== undefined) positiveInteger(`${field}.retry.initialIntervalMs`, retry.initialIntervalMs);
  if (retry?.maximumIntervalMs !== undefined) positiveInteger(`${field}.retry.maximumIntervalMs`, retry.maximumIntervalMs);
  if (retry?.maximumAttempts !== undefined && (!Number.isInteger(retry.maximumAttempts) || retry.maximumAttempts < 0)) {
    invalid(`${field}.retry.maximumAttempts`, 'must be an integer ≥ 0', retry.maximumAttempts);
  }
  if (retry?.backoffCoefficient !== undefined && !(retry.backoffCoefficient >= 1)) {
    invalid(`${field}.retry.backoffCoefficient`, 'must be a number ≥ 1', retry.backoffCoefficient);
  }
}

/**
 * The options of `toolName`'s activity: the run's activity options with the tool's
 * `perTool` entry over them, field by field (`retry` merged too).
 */
export function toolActivityOptions(opts: AgentActivityOptions | undefined, toolName: string): ToolActivityOptions | undefined {
  const own = opts?.perTool?.[toolName];
  if (own === undefined) return opts;
  const retry = opts?.retry === undefined && own.retry === undefined ? undefined : { ...opts?.retry, ...own.retry };
  return { ...opts, ...own, ...(retry !== undefined ? { retry } : {}) };
}

/**
 * Activity options for one activity call, `remainingMs` (> 0) before the run deadline:
 * schedule-to-close is the time left, start-to-close is the configured per-attempt timeout
 * bounded by it, the heartbeat timeout (10 s unless configured) applies to tool activities only (give a tool call's
 * options through {@link toolActivityOptions}). Tool calls wait for cancellation to complete (so
 * the result says what happened); other activities are cancelled at once.
 */
export function activityOptionsFor(kind: ActivityKind, remainingMs: number, opts: ToolActivityOptions | undefined): ActivityOptions {
  const options: ActivityOptions = {
    startToCloseTimeout: Math.min(opts?.startToCloseTimeoutMs ?? DEFAULT_START_TO_CLOSE_TIMEOUT_MS, remainingMs),
    scheduleToCloseTimeout: remainingMs,
    cancellationType: kind === 'tool' || kind === 'resolve' || kind === 'compensate' ? ActivityCancellationType.WAIT_CANCELLATION_COMPLETED : ActivityCancellationType.TRY_CANCEL,
  };
  const heartbeatMs = kind === 'tool' ? toolHeartbeatTimeoutMs(opts) : null;
  if (heartbeatMs !== null) options.heartbeatTimeout = Math.min(heartbeatMs, remainingMs);
  if (opts?.retry !== undefined) options.retry = toRetryPolicy(opts.retry);
  return options;
}

/**
 * Activity options while the run winds down (compensations, and the resolutions a
 * person gives while the run compensates): not bounded by the run deadline (a cancel near or
 * after it must still undo its effects), the configured per-attempt timeout, heartbeat timeout
 * and retry; waits for cancellation to complete. The caller runs them in a non-cancellable scope.
 */
export function windDownActivityOptions(kind: ActivityKind, opts: ToolActivityOptions | undefined): ActivityOptions {
  const options: ActivityOptions = {
    startToCloseTimeout: opts?.startToCloseTimeoutMs ?? DEFAULT_START_TO_CLOSE_TIMEOUT_MS,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
  const heartbeatMs = kind === 'tool' || kind === 'compensate' ? toolHeartbeatTimeoutMs(opts) : null;
  if (heartbeatMs !== null) options.heartbeatTimeout = heartbeatMs;
  if (opts?.retry !== undefined) options.retry = toRetryPolicy(opts.retry);
  return options;
}

/** A fenced activity's heartbeat timeout, ms: the configured one, {@link DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS} when none is given, null when `null` is. */
function toolHeartbeatTimeoutMs(opts: ToolActivityOptions | undefined): number | null {
  const configured = opts?.heartbeatTimeoutMs;
  return configured === undefined ? DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS : configured;
}

function toRetryPolicy(retry: ActivityRetryInput): RetryPolicy {
  const policy: RetryPolicy = {};
  if (retry.initialIntervalMs !== undefined) policy.initialInterval = retry.initialIntervalMs;
  if (retry.backoffCoefficient !== undefined) policy.backoffCoefficient = retry.backoffCoefficient;
  if (retry.maximumIntervalMs !== undefined) policy.maximumInterval = retry.maximumIntervalMs;
  // 0 means unlimited (ActivityRetryInput); the SDK refuses 0 and fails the workflow task, so it is left out.
  if (retry.maximumAttempts !== undefined && retry.maximumAttempts > 0) policy.maximumAttempts = retry.maximumAttempts;
  if (retry.nonRetryableErrorTypes !== undefined) policy.nonRetryableErrorTypes = [...retry.nonRetryableErrorTypes];
  return policy;
}

function nonEmptyString(field: string, value: unknown): void {
  if (typeof value !== 'string' || value.length === 0) invalid(field, 'must be a non-empty string', value);
}

function positiveInteger(field: string, value: unknown, alternative?: string): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    invalid(field, `must be a positive integer${alternative === undefined ? '' : ` ${alternative}`}`, value);
}

function invalid(field: string, rule: string, actual: unknown): never {
  throw ApplicationFailure.create({
    type: 'INVALID_ARGUMENT',
    message: `INVALID_ARGUMENT: agentWorkflow input ${field} ${rule}, got ${JSON.stringify(actual) ?? String(actual)}`,
    nonRetryable: true,
    details: [{ field }],
  });
}
