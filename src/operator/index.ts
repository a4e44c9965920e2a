/**
 * `temporal-tool-checkpoint/operator`: what a person's tools need (the CLI and the console are
 * built on it): find the runs waiting for someone, read the call a decision is about, sign an
 * approval as a grant, send the workflow's validated update, settle a plugin-fenced call in the store, and register the search
 * attributes agent runs set while a person is needed (docs/visibility.md).
 */
export { approveCall, rejectCall, resolveCall, readWaitingCall, readRunStatus, DecisionRefusedError } from './run-decisions';
export type { WaitingCall } from './run-decisions';
export {
  describedRunChain,
  signAgentApproval,
  signFencedCallApproval,
  parseGrantSigningKey,
  parseGrantVerificationKeys,
  newEd25519GrantKeyEntries,
  DEFAULT_GRANT_TTL_MS,
} from './approval-grants';
export type { ApprovalSigning, RunIdentity, GrantSigningKey, GrantVerificationKey, GrantedCall } from './approval-grants';
export type { FencedCallDescription } from '../plugin/contract/approval-contract';
export { listWaitingRuns, WAITING_RUNS_QUERY } from './waiting-runs';
export type { ListWaitingRunsOptions, WaitingRun } from './waiting-runs';
export { hasRunSearchAttributes, registerRunSearchAttributes, searchAttributeCreateCommands } from '../visibility/namespace-search-attributes';
export { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from '../workflows/agent/search-attributes';
