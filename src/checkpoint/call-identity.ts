/**
 * The call id a checkpoint binding carries (docs/protocol.md#call-identity): the run chain, the
 * workflow id and the application's call id, encoded as an RFC 8785 canonical JSON array so that no
 * two different (run chain, workflow, call) triples share a binding (`a/b` + `c` and `a` + `b/c`
 * were one string when the parts were joined by `/`). Pure and sandbox-safe.
 */
import { assertIdentifier } from './bounds';
import { canonicalJson } from './canonical-json';

/** Version tag, the first element of every encoded call id. */
export const CALL_ID_TAG = 'ttc/call/2';

/** The parts of a call's identity. */
export interface CallIdentity {
  /**
   * The run chain: the workflow's `firstExecutionRunId`, which survives continue-as-new but not a
   * new start that reuses the workflow id, so a new chain never sees an older chain's checkpoints.
   */
  readonly runChainId: string;
  readonly workflowId: string;
  /** The application's (or the model's) tool-call id within the run chain. */
  readonly callId: string;
}

/**
 * `["ttc/call/2",<runChainId>,<workflowId>,<callId>]` as canonical JSON: the `callId` of the
 * binding of this call. Injective: different parts never give the same text.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming a missing, empty or too long part.
 */
export function callBindingId(identity: CallIdentity): string {
  assertIdentifier(identity?.runChainId, 'runChainId');
  assertIdentifier(identity.workflowId, 'workflowId');
  assertIdentifier(identity.callId, 'callId');
  return canonicalJson([CALL_ID_TAG, identity.runChainId, identity.workflowId, identity.callId], 'callId');
}

/** The parts of a binding call id made by {@link callBindingId}, or null for any other text. */
export function parseCallBindingId(bindingCallId: string): CallIdentity | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bindingCallId);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== CALL_ID_TAG || !parsed.every((p) => typeof p === 'string')) return null;
  const [, runChainId, workflowId, callId] = parsed as string[];
  return { runChainId: runChainId!, workflowId: workflowId!, callId: callId! };
}
