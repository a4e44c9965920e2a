/**
 * The agent workflow's metrics, on Temporal's workflow metric meter: exported wherever the worker's
 * Temporal `Runtime` exports metrics (Prometheus or OTLP), with the workflow's tags (namespace,
 * task queue, workflow type) added by the SDK, and never emitted while a history is replayed.
 * Sandbox-safe.
 */
import { metricMeter } from '@temporalio/workflow';

/** Metric names, as they appear in Prometheus. */
export const RUN_METRICS = {
  /**
   * Counter: decisions on calls that need approval, one per call, tag `decision` (`approved`,
   * `rejected`: a person's update was accepted; `expired`: nobody decided before the approval
   * expired) and `tool` (a tool the run's approval policy
   * names, so the tag's values are bounded by the worker's tools).
   */
  APPROVAL_DECISIONS: 'ttc_approval_decisions',
} as const;

/** The values of `ttc_approval_decisions`' `decision` tag. */
export type ApprovalDecision = 'approved' | 'rejected' | 'expired';

/** Counts one approval decision on a call of `tool`. */
export function countApprovalDecision(decision: ApprovalDecision, tool: string): void {
  metricMeter.createCounter(RUN_METRICS.APPROVAL_DECISIONS, 'decisions', 'Decisions on tool calls that need approval, by decision').add(1, { decision, tool });
}
