/**
 * The audit a person's resolution of an unknown outcome leaves in the checkpoint: who resolved the
 * call, why, when, from which status and under which claim. It is stored in the result payload as
 * its `resolvedInStore` member, so the record keeps it as long as it keeps the result, and a run
 * receives the stored payload whole (its result's `outcome` shows the audit); the model reads only
 * `output`, and a plugin-fenced activity returns only `output` (or fails with `error`).
 * Written by `./resolution.ts` for `agentWorkflow`'s `resolveToolCall`, batch item resolutions and `resolveCallInStore`.
 */
import type { CheckpointRecord } from '../../checkpoint/types';
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

/**
 * The audit of a record a person resolved (its payload's `resolvedInStore`), or null for any
 * other record. Reads only; never throws.
 */
export function resolutionAuditOf(record: CheckpointRecord | null): ResolutionAudit | null {
  const payload = record?.result?.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const audit = (payload as Record<string, unknown>).resolvedInStore;
  if (typeof audit !== 'object' || audit === null || Array.isArray(audit)) return null;
  const { kind, by, reason, at } = audit as Record<string, unknown>;
  if ((kind !== 'applied' && kind !== 'not-applied') || (typeof by !== 'string' && by !== null) || typeof reason !== 'string' || typeof at !== 'string') return null;
  return audit as unknown as ResolutionAudit;
}
