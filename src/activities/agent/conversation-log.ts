/**
 * The conversation logs of a run chain (claim check): where an agent run's conversation and
 * its large tool outputs live in the side store instead of in workflow history. The log forks
 * at a reset: a reset run writes its messages to its own log, any other run to the log its
 * conversation is in (the chain's log, or the last reset run's), and each reads the earlier
 * ones from the logs of the runs that wrote them, so a run reset to an earlier workflow task
 * writes its new answers beside the discarded branch's, never over them (see `ConversationRef.segments`). Logs are named by {@link conversationLogId};
 * messages at `m/<index>` (9 digits), tool outputs at `r/<callId>` in the chain's log.
 * Activities name the logs from their own context (namespace, workflow id, run id) plus the
 * input's tenant and run chain, so a workflow can never name another workflow's log, nor write to
 * another run's.
 *
 * Node side (node:crypto through the digest module); workflow code imports only `../contract/contract`.
 */
import { Context } from '@temporalio/activity';
import { LIMITS, utf8ByteLength } from '../../checkpoint/bounds';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { sha256Hex } from '../../checkpoint/digest';
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { DeliveredOutcome, OutputRef, ToolOutcome } from '../contract/contract';

/**
 * The parts that name a log: the Temporal namespace and workflow id (from the activity context),
 * the tenant, the run chain (`firstExecutionRunId`) and the run of the chain whose log it is
 * (`runId`; absent or equal to `runChainId`: the chain's own log).
 */
export interface ConversationLogParts {
  readonly namespace: string;
  readonly tenant: string;
  readonly workflowId: string;
  readonly runChainId: string;
  readonly runId?: string;
}

/** Digits of a message index in its key (`m/000000012`): room for a billion messages, and keys sort in index order. */
export const MESSAGE_INDEX_DIGITS = 9;

/** Bounds of a value by reference: looser than a payload's (see `stores/entry-codec.ts`); bytes are what caps it. */
const REF_BOUNDS = { maxDepth: LIMITS.maxDepth + 8, maxValues: 1_000_000 } as const;

/**
 * The log id of a run chain, or of one run of it: lowercase hex SHA-256 of the RFC 8785
 * canonical JSON of `['ttc/conversation-log/1', namespace, tenant, workflowId, runChainId]` (the
 * chain's log, also the log of its first run: `runId` absent or equal to `runChainId`), else of
 * `['ttc/conversation-log/1', namespace, tenant, workflowId, runChainId, runId]`. Stable across
 * processes and releases; 64 characters.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the part that is missing or not a non-empty string.
 */
export function conversationLogId(parts: ConversationLogParts): string {
  for (const field of ['namespace', 'tenant', 'workflowId', 'runChainId', 'runId'] as const) {
    const value = parts?.[field];
    if (field === 'runId' && value === undefined) continue;
    if (typeof value !== 'string' || value.length === 0)
      throw new CheckpointError('INVALID_ARGUMENT', `conversation log: ${field} is required and must be a non-empty string`, { field });
  }
  const chain = ['ttc/conversation-log/1', parts.namespace, parts.tenant, parts.workflowId, parts.runChainId];
  return sha256Hex(canonicalJson(parts.runId === undefined || parts.runId === parts.runChainId ? chain : [...chain, parts.runId]));
}

/** Where the activity runs, when it runs outside an activity context (unit tests): the namespace and workflow id the logs are named with. */
export interface ExplicitLogScope {
  readonly namespace: string;
  readonly workflowId: string;
  /** The run the activity runs for (an activity context's `workflowExecution.runId`): the run chain when the input names none; @default the run chain */
  readonly runId?: string;
}

/** The logs an activity of one run uses (see {@link activityConversationLogs}): 64-character log ids. */
export interface RunConversationLogs {
  /** The run chain's log: tool outputs by reference, and every message of a conversation given without segments. */
  readonly chain: string;
  /** The run the activity runs for; a model turn writes its messages to that run's log. */
  readonly runId: string;
  /** The log of run `runId` of the chain (the chain's log for its first run). @throws {@link CheckpointError} INVALID_ARGUMENT for an empty run id. */
  logOf(runId: string): string;
}

/**
 * The logs for an activity of the current workflow: namespace, workflow id and run id from the
 * activity context (`workflowNamespace`, `workflowExecution`), so the input cannot name another
 * workflow's log nor make the activity write to another run's; `runChainId` defaults to the
 * context's run id, as a tool call's binding does. Outside an activity context (unit tests)
 * `outside` supplies them.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT outside a workflow's activity without `outside`, or for a missing part.
 */
export function activityConversationLogs(tenant: string, runChainId: string | undefined, outside?: ExplicitLogScope): RunConversationLogs {
  let scope: ExplicitLogScope | undefined;
  try {
    const info = Context.current().info;
    const execution = info.workflowExecution;
    if (execution?.workflowId !== undefined) scope = { namespace: info.workflowNamespace ?? info.activityNamespace, workflowId: execution.workflowId, runId: execution.runId };
  } catch {
    scope = outside; // not in an activity
  }
  if (scope === undefined)
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      'the conversation log is named from the activity context: run inside a workflow activity (or give the scope explicitly in tests)',
      { field: 'workflowId' },
    );
  const chainParts = { namespace: scope.namespace, tenant, workflowId: scope.workflowId, runChainId: runChainId ?? scope.runId ?? '' };
  const logOf = (runId: string): string => conversationLogId({ ...chainParts, runId });
  return { chain: conversationLogId(chainParts), runId: scope.runId ?? chainParts.runChainId, logOf };
}

/** The key of message `index` (0-based): `m/` + the index zero-padded to 9 digits. @throws {@link CheckpointError} INVALID_ARGUMENT unless 0 ≤ index < 10⁹. */
export function messageKey(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0 || index >= 10 ** MESSAGE_INDEX_DIGITS) {
    throw new CheckpointError('INVALID_ARGUMENT', `message index must be an integer from 0 to ${10 ** MESSAGE_INDEX_DIGITS - 1}, got ${String(index)}`, { field: 'index' });
  }
  return `m/${String(index).padStart(MESSAGE_INDEX_DIGITS, '0')}`;
}

/** The key of a tool call's output: `r/<callId>` (the call id the activity ran under, unique within the run chain). */
export function outputKey(callId: string): string {
  return `r/${callId}`;
}

/**
 * The reference to `value` stored at `key`: `bytes` is the UTF-8 length of the value's RFC 8785
 * canonical JSON text, `digest` is `sha256:` + hex SHA-256 of that text.
 *
 * @throws {@link CheckpointError} NOT_JSON / PAYLOAD_TOO_LARGE for a value that is not bounded JSON.
 */
export function outputRefFor(key: string, value: JsonValue): OutputRef {
  const text = canonicalJson(value, 'output', REF_BOUNDS);
  return { key, bytes: utf8ByteLength(text), digest: `sha256:${sha256Hex(text)}` };
}

/**
 * Whether `value` is what `ref` stands for (same canonical bytes and digest).
 *
 * @throws {@link CheckpointError} CONVERSATION_CONFLICT (non-retryable) when it is not.
 */
export function assertMatchesRef(logId: string, ref: OutputRef, value: JsonValue): void {
  const actual = outputRefFor(ref.key, value);
  if (actual.bytes !== ref.bytes || actual.digest !== ref.digest) {
    throw new CheckpointError(
      'CONVERSATION_CONFLICT',
      `conversation log ${logId} entry ${ref.key} is ${actual.bytes} bytes with digest ${actual.digest}, but its reference says ${ref.bytes} bytes with digest ${ref.digest}`,
      {
        logId,
        key: ref.key,
        field: 'contentRef',
      },
    );
  }
}

/**
 * A tool outcome as an agent run receives it (claim check): a success whose output's canonical
 * JSON is longer than `inlineMaxBytes` UTF-8 bytes is written to the log at `r/<callId>` and
 * returned as `{ ok: true, outputRef, receipt }`; anything else is returned unchanged: an output
 * at or under the threshold, every error outcome, and an output with an `encoding` (a fenced
 * user activity's bytes, which the plugin never sends by reference). The receipt always stays
 * inline. Idempotent: a retried delivery writes the same entry again (the stored result is
 * redelivered byte for byte).
 *
 * @param inlineMaxBytes positive integer, UTF-8 bytes.
 * @throws {@link CheckpointError} from `putConversationEntries`: CONVERSATION_CONFLICT when
 *   `r/<callId>` holds another output, the store codes; INVALID_ARGUMENT for a bad threshold.
 */
export async function deliverOutput(store: CheckpointStore, logId: string, callId: string, outcome: ToolOutcome, inlineMaxBytes: number): Promise<DeliveredOutcome> {
  if (!Number.isSafeInteger(inlineMaxBytes) || inlineMaxBytes < 1)
    throw new CheckpointError('INVALID_ARGUMENT', `inlineMaxBytes must be a positive integer, got ${String(inlineMaxBytes)}`, { field: 'resultByReference.inlineMaxBytes' });
  if (!outcome.ok || outcome.encoding !== undefined) return outcome;
  const ref = outputRefFor(outputKey(callId), outcome.output);
  if (ref.bytes <= inlineMaxBytes) return outcome;
  await store.putConversationEntries(logId, [{ key: ref.key, value: outcome.output }]);
  return { ok: true, outputRef: ref, receipt: outcome.receipt };
}
