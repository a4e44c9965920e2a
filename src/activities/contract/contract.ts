/**
 * The contract between the agent workflow and the fenced tool activity: input, result and
 * failure types, the activity names the agent layer reserves. Types, constants and pure helpers
 * only, sandbox-safe: workflow code imports this file.
 */
import type { CheckpointErrorCode } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';

/**
 * The failure types after which the workflow reports a tool call as not run ("nothing applied",
 * the model sees the error). The fenced activity emits them only with evidence that no attempt
 * of the call ever held a claim (docs/protocol.md#nothing-applied); every other
 * failure of a tool call may hide an applied effect.
 */
export const NOTHING_APPLIED_CODES: readonly CheckpointErrorCode[] = [
  'INVALID_TOOL_INPUT',
  'UNKNOWN_TOOL',
  'BINDING_CONFLICT',
  'TOOL_REJECTED',
  'INVALID_ARGUMENT',
  'TOOL_TRANSIENT',
  'STORE_UNAVAILABLE',
  'APPROVAL_MISMATCH',
  'APPROVAL_EXPIRED',
  'NOT_PINNED',
  'APPROVAL_REQUIRED',
  'IDEMPOTENCY_CONFLICT',
  'RESET_OF_CONTINUED_RUN',
  'DISCARDED_BY_RESET',
];

/** Whether `outcome` is a stored refusal that proves its call applied nothing: `ok: false` with a {@link NOTHING_APPLIED_CODES} type. */
export function isNothingAppliedOutcome(outcome: { readonly ok: boolean; readonly error?: { readonly type?: unknown } } | null | undefined): boolean {
  return outcome?.ok === false && (NOTHING_APPLIED_CODES as readonly unknown[]).includes(outcome.error?.type);
}

/**
 * Heartbeat timeout of a fenced tool activity when its workflow gave none, ms: the agent
 * workflow's tool activities and the plugin's fenced activities. The fence heartbeats every third
 * of it while the tool runs, so a killed worker's call is retried about this long after the kill
 * instead of at its start-to-close timeout (docs/protocol.md#agent-workflow, #worker-plugin).
 */
export const DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS = 10_000;

/** Input of one `runFencedTool` activity: one tool call the model asked for. */
export interface FencedToolInput {
  /** Tenant within the Temporal namespace; the binding's namespace is `<temporal namespace>/<tenant>`. */
  readonly tenant: string;
  /**
   * The model's tool-call id, unique within the run chain; the binding's call id is
   * `callBindingId({ runChainId, workflowId, callId })`.
   */
  readonly callId: string;
  /**
   * The run chain: the workflow's `firstExecutionRunId` (the agent workflow passes it). A new chain
   * that reuses a workflow id never sees an older chain's checkpoints
   * (docs/protocol.md#call-identity).
   * @default the activity's `workflowExecution.runId` (unique, but new after continue-as-new)
   */
  readonly runChainId?: string;
  readonly toolName: string;
  /** The tool's arguments as the model gave them; validated against the tool's schema first. */
  readonly input: JsonValue;
  /**
   * The intent digest a person approved (from `describeToolCall`), for a call that needed
   * approval. `runFencedTool` refuses with APPROVAL_MISMATCH, before any checkpoint write, when
   * the digest it computes for the call differs. Absent: no approval is checked.
   */
  readonly expectedIntentDigest?: string;
  /** Who approved the call (the approval's `by`), for the call's span (`ttc.decision.by`); not part of the call's identity. */
  readonly approvedBy?: string;
  /**
   * A person's signed approval grant of exactly this call (docs/protocol.md#approval-grants). A
   * worker holding grant keys verifies it before any claim and refuses a `requireApproval` call
   * without one (APPROVAL_REQUIRED), or one for another call or intent (APPROVAL_MISMATCH).
   */
  readonly approvalGrant?: string;
  /**
   * When the approval of this call expires, ISO-8601 UTC. At or after it the activity refuses
   * with APPROVAL_EXPIRED before any claim (nothing runs). Absent: no expiry.
   */
  readonly approvalExpiresAt?: string;
  /**
   * Only for tools declared with `dedupeByIntent`: which generation of the intent this call
   * belongs to. Calls of one run with the same intent and generation share one checkpoint.
   * 0 for the model's calls; n for the n-th rerun after a person proved the effect absent (so a
   * rerun never reopens the old checkpoint). @default 0
   */
  readonly intentGeneration?: number;
  /**
   * Only for `dedupeByIntent` tools: the run's current generation per intent digest (raised when
   * a person proves a call's effect absent). The call uses the larger of this entry for its
   * digest and `intentGeneration`, so a later call with a proven-absent intent never reopens the
   * old checkpoint. @default {}
   */
  readonly intentGenerations?: Readonly<Record<string, number>>;
  /**
   * Only for `businessKey` tools: the call ids of this run chain and workflow whose effect a
   * person proved absent (the earlier calls a rerun replaces). A business key one of them holds
   * is taken over by this call instead of answering it (docs/protocol.md#business-keys). At most
   * 100 entries. @default []
   */
  readonly provenAbsentCallIds?: readonly string[];
  /**
   * Set by agent runs (patch `ttc-reset-safe-calls`) for every call: a tool without `businessKey`
   * or `dedupeByIntent` claims the first free occurrence of its intent digest within `scope` (the
   * run chain's continue-as-new segment, `occurrenceScopeOf` in `checkpoint/run-scope.ts`), so a reset
   * run's call that means an action a discarded branch applied is answered from that call's
   * checkpoint (docs/protocol.md#resets). `liveCalls`: `packCallHashes` of the call ids in this
   * run's history that other runs made (a reset run's calls before its reset point); `liveRuns`: those runs;
   * `earlierRuns`: in a reset lineage (a reset run and the runs continued from it, which keep its
   * `scope`), the lineage's earlier runs, every call of which is this run's history; `ownCallsIn`:
   * the run the scheduling run addresses its own calls in (@default the run the call id names);
   * `refusedIfStarted`: segments whose start means this reset lineage's reset run reset a run that
   * had continued as new: the call is refused before its claim (RESET_OF_CONTINUED_RUN);
   * `notRun`: `packCallHashes` of the calls of this run's history that applied nothing in it
   * (rejected, failed before anything ran, DISCARDED_BY_RESET among them, never started, or answered
   * with a stored nothing-applied refusal), which are never its branch's, whatever the other fields say;
   * `builtInRun`: the run whose workflow task built this input; dispatched in another run (Temporal
   * dispatches an activity still scheduled at a reset point again in the reset run) before any
   * attempt claimed, the call is refused before its claim (DISCARDED_BY_RESET);
   * `from`: the first occurrence to try (the plugin's count of earlier calls of the same action in the run). @default 0
   */
  readonly occurrences?: {
    readonly scope: string;
    readonly from?: number;
    readonly liveCalls?: string;
    readonly liveRuns?: readonly string[];
    readonly earlierRuns?: readonly string[];
    readonly ownCallsIn?: string;
    readonly refusedIfStarted?: readonly string[];
    readonly notRun?: string;
    readonly builtInRun?: string;
  };
  /**
   * Set by agent runs started with patch `ttc-long-runs` (claim check): a successful output whose
   * JSON text is longer than `inlineMaxBytes` (UTF-8 bytes) is written to the run's conversation
   * log in the side store and the activity returns an {@link OutputRef} in its place, so history
   * never holds it. Absent: the output is returned inline, whatever its size (older runs, plugin
   * calls).
   */
  readonly resultByReference?: { readonly inlineMaxBytes: number };
  /**
   * Set by the workflow (never by the model) for the compensation of call `callId`:
   * the call runs the compensation `toolName` declares, under the compensation's own binding and
   * an idempotency key derived from the original call's. @default absent (the call itself)
   */
  readonly role?: 'compensation';
}

/**
 * One item of a batch call (`ctx.forEachItem`): its key within the call and its
 * generation (1, raised each time a person proves the item's effect absent, so a rerun never
 * reopens the old checkpoint). Carried in an OUTCOME_UNKNOWN failure's `details.item` (with
 * `index` and `idempotencyKey`) and in a resolution of that item.
 */
export interface BatchItemRef {
  readonly key: string;
  readonly generation: number;
}

/**
 * A reference to a value kept in the run's conversation log in the side store instead of in
 * workflow history (the claim-check pattern). The log is the run chain's (tenant, workflow id,
 * first execution run id); `key` names the entry, `bytes` is the UTF-8 length of the value's
 * JSON text, `digest` is `sha256:<hex>` of that text (the reader checks it: CONVERSATION_CONFLICT).
 */
export interface OutputRef {
  readonly key: string;
  readonly bytes: number;
  readonly digest: string;
}

/**
 * A tool outcome as an agent run receives it: the {@link ToolOutcome}, or, for a success whose
 * output was too large to carry in history, the output's {@link OutputRef} (with the receipt,
 * which stays small and inline so a person can reconcile from the status alone).
 */
export type DeliveredOutcome = ToolOutcome | { readonly ok: true; readonly outputRef: OutputRef; readonly receipt: JsonValue };

/**
 * What the agent's tool activities (`runFencedTool`, each tool's own activity) and
 * `resolveToolCall` return to an agent run: the fence's result with the outcome as delivered
 * ({@link DeliveredOutcome}: by reference when the input asked for `resultByReference` and the
 * output is over its threshold).
 */
export type Delivered<R extends { readonly outcome: ToolOutcome }> = Omit<R, 'outcome'> & { readonly outcome: DeliveredOutcome };

/**
 * Input of a tool's own activity (each tool is its own activity type, named after the
 * tool): a {@link FencedToolInput} without `toolName`, since the activity type names the tool.
 * A `toolName` that is present is overridden by the activity type.
 */
export type ToolCallInput = Omit<FencedToolInput, 'toolName'> & { readonly toolName?: string };

/**
 * The activity names a tool may not take, since each tool is registered as an activity of its name:
 * the ones the agent layer registers itself (`runFencedTool` stays registered for runs that
 * scheduled tool calls under it before patch `ttc-tool-activity-types`) and `default`, which the
 * Temporal worker runs for every activity type nothing else registers, and `describeFencedCall`,
 * which `ToolCheckpointPlugin` registers with fenced activities. `defineTool` refuses them with
 * INVALID_ARGUMENT.
 */
export const RESERVED_ACTIVITY_NAMES = ['runModelTurn', 'describeToolCall', 'resolveToolCall', 'runFencedTool', 'default', 'describeFencedCall', 'compensateToolCall'] as const;
export type ReservedActivityName = (typeof RESERVED_ACTIVITY_NAMES)[number];

/** Whether `name` is one of {@link RESERVED_ACTIVITY_NAMES}. */
export function isReservedActivityName(name: string): name is ReservedActivityName {
  return (RESERVED_ACTIVITY_NAMES as readonly string[]).includes(name);
}

/**
 * Whether an activity of `agentWorkflow` with this type is a fenced tool call: a tool's own
 * activity (any type that is not reserved) or, in runs from before patch `ttc-tool-activity-types`,
 * `runFencedTool`. For tooling that reads a run's history or pending activities.
 */
export function isToolCallActivityType(activityType: string | null | undefined): boolean {
  if (typeof activityType !== 'string' || activityType.length === 0) return false;
  return activityType === 'runFencedTool' || !isReservedActivityName(activityType);
}

/**
 * The failure type the Temporal worker gives an activity whose type it does not register
 * (`ApplicationFailure` `NotFoundError`). The agent workflow makes it non-retryable for tool
 * activities and reports the call as UNKNOWN_TOOL: the activity never ran, nothing was applied.
 */
export const ACTIVITY_NOT_REGISTERED = 'NotFoundError';

/**
 * The summary the agent workflow gives a tool call's activity (shown by the Temporal UI and
 * `temporal workflow show`): the tool and the call id it runs under.
 */
export function toolCallSummary(toolName: string, callId: string): string {
  return `${toolName} call ${callId}`;
}

/** How the activity obtained the result it returns. */
export const RESULT_SOURCES = ['executed', 'store', 'lookup', 'same-key-repeat'] as const;
export type ResultSource = (typeof RESULT_SOURCES)[number];

/** How a stored output encodes a result JSON cannot hold, by Temporal's payload encoding names (see `ToolSuccess.encoding`). */
export type ResultEncoding = 'binary/plain' | 'binary/null';

/**
 * The payload stored in the checkpoint and redelivered byte for byte: a success with the
 * tool's output (and the provider's receipt, if any; `encoding` for a fenced activity's bytes or
 * undefined) or a handler error the model should see.
 */
export type ToolOutcome =
  | { readonly ok: true; readonly output: JsonValue; readonly receipt: JsonValue; readonly encoding?: ResultEncoding }
  | {
      readonly ok: false;
      readonly error: {
        readonly type: string;
        readonly message: string;
        /**
         * The provider's receipt (ticket id, message id, …) of a tool that ran but whose result
         * could not be stored (`type` PAYLOAD_TOO_LARGE or NOT_JSON): kept so a person
         * can reconcile the effect. Only a receipt that is JSON of at most 4,096 UTF-8 bytes is
         * kept (`TOO_LARGE_RECEIPT_MAX_BYTES`). Absent for every other error.
         */
        readonly receipt?: JsonValue;
      };
    };

/** Result of one `runFencedTool` activity. */
export interface FencedToolResult {
  readonly callId: string;
  readonly toolName: string;
  readonly toolRevision: string;
  readonly source: ResultSource;
  readonly outcome: ToolOutcome;
  readonly idempotencyKey: string;
  /** Null when this worker cannot compute it (the call's result was stored under a tool it no longer has). */
  readonly intentDigest: string | null;
  /**
   * Set when the result was stored under another tool revision (or input fingerprint) than this
   * worker's: a deploy landed between the attempts of the call, and the stored result is
   * delivered as it was (docs/protocol.md#nothing-applied).
   */
  readonly storedUnder?: { readonly toolName: string; readonly toolRevision: string };
  /**
   * Set when the call of another run (or workflow) answered this one: the first call with the
   * tool's business key within its window (docs/protocol.md#business-keys). The effect is that
   * call's; this call applied nothing.
   */
  readonly answeredBy?: { readonly workflowId: string; readonly runChainId: string; readonly callId: string };
  /**
   * Set when a call of another run of this run chain, one a reset discarded, applied this action
   * (same tool and intent digest, same occurrence): its checkpoint answered this call, which applied
   * nothing (docs/protocol.md#resets).
   */
  readonly appliedByRun?: AppliedByRun;
}

/**
 * The call of another run of this run chain, one a reset discarded, whose checkpoint answered a call
 * (docs/protocol.md#resets): `callId` that call's id, `runId` its run's; `recordedFor`: the run the
 * answered call's adoption is recorded for (its `occurrences.ownCallsIn`), where later runs of its
 * history look for it.
 */
export interface AppliedByRun {
  readonly runId: string;
  readonly callId: string;
  readonly recordedFor?: string;
}

/**
 * Input of the `describeToolCall` activity: the same call the workflow would hand to
 * `runFencedTool`. Nothing is written and no tool runs; the worker only resolves the tool's
 * revision and computes the call's digests (the workflow sandbox cannot hash).
 */
export type DescribeToolCallInput = FencedToolInput;

/**
 * What `describeToolCall` returns: the frozen identity of a pending call, shown to the person
 * who approves it. An approval is bound to `intentDigest` (see `intentDigest` in
 * `checkpoint/digest.ts`), the digest over `toolName`, `toolRevision`, `arguments` and `target`.
 */
export interface ToolCallDescription {
  /** Revision of the tool the worker would run. */
  readonly toolRevision: string;
  /** `sha256:` + hex over tool, revision, canonical arguments and target (docs/protocol.md#keys-and-digests). */
  readonly intentDigest: string;
  /** The idempotency key `runFencedTool` would hand to the tool for this call id. */
  readonly idempotencyKey: string;
  /**
   * The arguments that will run, for the approver to read: the model's input after the tool's
   * schema (unknown keys stripped, defaults filled), as the RFC 8785 canonical JSON the digest
   * hashes parses back. `intentDigest` covers exactly these and `execute` receives exactly
   * these.
   */
  readonly arguments: JsonValue;
  /** The tool's `target(arguments)`, also covered by `intentDigest`; null when the tool declares none. */
  readonly target: JsonValue;
}

/** How a person settled an unknown outcome; only `applied` reaches the worker. */
export const TOOL_CALL_RESOLUTIONS = ['applied', 'absent', 'abandon'] as const;
export type ToolCallResolution = (typeof TOOL_CALL_RESOLUTIONS)[number];

/**
 * Input of the `resolveToolCall` activity: a person proved that the call's effect was applied
 * and supplied its result. The worker stores `result` through `completeExecution` under the
 * original fence (executing or uncertain → completed), then delivers it. `callId` is the call
 * id that paused (the one `runFencedTool` ran under).
 */
export interface ResolveToolCallInput extends FencedToolInput {
  /** `absent` only together with `item`: the item's effect is proven absent and the item runs again (next generation). */
  readonly resolution: 'applied' | 'absent';
  /** The exact payload to store and deliver, as `runFencedTool` would have returned it (for an item: the item's outcome). */
  readonly result?: ToolOutcome;
  /**
   * The paused item of a batch call (from the OUTCOME_UNKNOWN failure's `details.item`): the
   * resolution is stored in that item's checkpoint, not the call's, and the workflow then runs
   * the call again (same call id), which resumes the batch after the item.
   */
  readonly item?: BatchItemRef;
  /** Why the person believes the effect was applied (audit text, non-empty). */
  readonly reason: string;
  /** Who decided (kept in the checkpoint's audit, see `../fence/resolution-audit`; 1 to 256 characters). @default null */
  readonly decidedBy?: string;
}

/** Result of `resolveToolCall`: the stored payload (the outcome and, for a person's resolution, its `resolvedInStore` audit: see `../fence/resolution-audit`), delivered; the tool was not called. */
export interface ResolveToolCallResult {
  readonly callId: string;
  readonly toolName: string;
  readonly toolRevision: string;
  readonly outcome: ToolOutcome;
  readonly idempotencyKey: string;
  /** Null when this worker cannot compute it (the tool is gone). */
  readonly intentDigest: string | null;
  /** Set when the call had adopted the checkpoint of a call a reset discarded (see {@link FencedToolResult.appliedByRun}). */
  readonly appliedByRun?: AppliedByRun;
}
