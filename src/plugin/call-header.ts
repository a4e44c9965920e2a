/**
 * The call-identity activity header, shared by the workflow outbound interceptor (sandbox) and
 * the fence interceptor (Node). Node-free: imports only `@temporalio/common`.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';

/** Header key: underscore, vendor, kebab case (never the SDK's reserved `__temporal_` prefix). */
export const CALL_HEADER = '_ttc-call';

/** What the header carries. */
export interface CallHeader {
  /**
   * The call within its run chain: `act-<seq>` for the chain's first run, `act-<seq>@<continuedFromExecutionRunId>`
   * after a continue-as-new (or a workflow retry), where `seq` is the workflow's activity command
   * sequence number (deterministic on replay). A reset keeps the started event, so it keeps the ids.
   */
  readonly callId: string;
  /** The workflow's `firstExecutionRunId`. */
  readonly runChainId: string;
}

/** `headers` with the call header added (the input's other headers unchanged). */
export function withCallHeader(headers: Headers, call: CallHeader): Headers {
  return { ...headers, [CALL_HEADER]: defaultPayloadConverter.toPayload({ callId: call.callId, runChainId: call.runChainId }) };
}

/** The call header of `headers`, or undefined when it is absent or malformed. */
export function readCallHeader(headers: Headers | undefined): CallHeader | undefined {
  const payload = headers?.[CALL_HEADER];
  if (payload === undefined) return undefined;
  let value: unknown;
  try {
    value = defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
  const { callId, runChainId } = (value ?? {}) as Partial<Record<keyof CallHeader, unknown>>;
  if (typeof callId !== 'string' || callId === '' || typeof runChainId !== 'string' || runChainId === '') return undefined;
  return { callId, runChainId };
}

/** The call id of the activity command `seq` in a run continued from `continuedFromExecutionRunId` (see {@link CallHeader.callId}). */
export function callIdOf(seq: number, continuedFromExecutionRunId: string | undefined): string {
  return continuedFromExecutionRunId === undefined ? `act-${seq}` : `act-${seq}@${continuedFromExecutionRunId}`;
}
