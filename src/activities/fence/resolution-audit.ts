/**
 * The audit a person's resolution of an unknown outcome leaves in the checkpoint: who resolved the
 * call, why, when, from which status and under which claim. It is stored in the result payload as
 * its `resolvedInStore` member, so the record keeps it as long as it keeps the result, and a run
 * receives the stored payload whole (its result's `outcome` shows the audit); the model reads only
 * `output`, and a plugin-fenced activity returns only `output` (or fails with `error`).
 * Written by `agentWorkflow`'s `resolveToolCall`, batch item resolutions and `resolveCallInStore`.
 */
import type { ToolOutcome } from '../contract/contract';

/** Who resolved a call, why and when (see the module comment). */
export interface ResolutionAudit {
  readonly kind: 'applied' | 'not-applied';
  /** Who decided, as the decision named them (1 to 256 characters); null when it named no one. */
  readonly by: string | null;
  readonly reason: string;
  /** ISO-8601 UTC; the record's `updatedAt` after the resolution. */
  readonly at: string;
  /** The status the person resolved from. */
  readonly fromStatus: 'executing' | 'uncertain';
  /** The fence the result was stored under (the claim that never finished). */
  readonly attemptId: string;
}

/** `outcome` with its audit, as stored. */
export function withResolutionAudit<T extends ToolOutcome>(outcome: T, audit: ResolutionAudit): T & { readonly resolvedInStore: ResolutionAudit } {
  return { ...outcome, resolvedInStore: audit };
}
