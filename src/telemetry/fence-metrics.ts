/**
 * The fence's metrics, recorded on Temporal's metric meter (the activity context's `metricMeter`),
 * so they are exported wherever the worker's Temporal `Runtime` exports metrics (Prometheus or
 * OTLP), with the activity's tags (namespace, task queue, activity type) added by the SDK. Without
 * a metrics exporter the meter is a no-op.
 *
 * Names are Prometheus-style (`snake_case`, `ttc_` prefix; Temporal's `metricPrefix` applies only
 * to the SDK's own metrics). Counters carry no `_total` suffix unless the runtime's
 * `countersTotalSuffix` adds it.
 */
import type { MetricCounter, MetricHistogram, MetricMeter, MetricTags } from '@temporalio/common';
import { isolated } from './isolated';

/** Metric names, as they appear in Prometheus. */
export const FENCE_METRICS = {
  /** Counter: fenced call attempts that returned a result, tag `source` (executed, store, lookup, same-key-repeat). */
  TOOL_CALLS: 'ttc_tool_calls',
  /**
   * Counter: fenced call attempts that ended waiting instead of with a result, tag `reason` = the
   * error code: OUTCOME_UNKNOWN (the run pauses for a person), RECONCILE_PENDING (the next attempt
   * reconciles after the holder's settle time).
   */
  PAUSES: 'ttc_pauses',
  /**
   * Counter: attempts of approved calls, tag `outcome`: `ran` (the attempt ran the tool, or settled
   * it by lookup or a same-key repeat, under an approved intent digest), `expired` (the approval
   * expired before the attempt could claim: APPROVAL_EXPIRED). People's decisions themselves are
   * counted by the agent workflow: `ttc_approval_decisions` (src/workflows/agent/run-metrics.ts).
   */
  APPROVED_CALL_ATTEMPTS: 'ttc_approved_call_attempts',
  /** Counter: compare-and-swaps of the checkpoint store that found the record changed (nothing written). */
  CAS_CONFLICTS: 'ttc_cas_conflicts',
  /**
   * Histogram, ms (float): time of one checkpoint store operation, tag `operation` (the
   * `CheckpointStore` method). Temporal's default buckets start at 50 ms; `ttc worker` installs
   * {@link STORE_LATENCY_BUCKETS_MS} (give them as `histogramBucketOverrides` to your own runtime).
   */
  STORE_OPERATION_LATENCY: 'ttc_store_operation_latency',
} as const;

/** Bucket boundaries (ms) for {@link FENCE_METRICS.STORE_OPERATION_LATENCY}: a SQLite operation takes well under 1 ms, a PostgreSQL one a few ms. */
export const STORE_LATENCY_BUCKETS_MS: readonly number[] = [0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000];

/** The values of `ttc_approved_call_attempts`' `outcome` tag. */
export type ApprovedCallOutcome = 'ran' | 'expired';

/**
 * The fence's metrics on one meter. Each instrument is created on first use (an attempt that
 * never pauses creates no pause counter). Creating and recording are {@link isolated}: a meter
 * or instrument that throws loses the value, never the fenced call.
 */
export class FenceMetrics {
  private readonly created = new Map<string, MetricCounter | MetricHistogram>();

  constructor(private readonly meter: MetricMeter) {}

  /** One attempt returned a result obtained from `source`. */
  toolCall(source: string): void {
    this.count(FENCE_METRICS.TOOL_CALLS, 'Fenced tool call attempts that returned a result, by result source', { source });
  }

  /** One attempt ended waiting (`reason`: the error code). */
  pause(reason: string): void {
    this.count(FENCE_METRICS.PAUSES, 'Fenced tool call attempts that ended waiting for a person or for reconciliation, by error code', { reason });
  }

  /** An attempt of an approved call ran it or found its approval expired. */
  approvedCallAttempt(outcome: ApprovedCallOutcome): void {
    this.count(FENCE_METRICS.APPROVED_CALL_ATTEMPTS, 'Attempts of approved tool calls, by outcome (ran, expired)', { outcome });
  }

  /** A compare-and-swap found the record changed. */
  casConflict(): void {
    this.count(FENCE_METRICS.CAS_CONFLICTS, 'Checkpoint compare-and-swaps that lost to a concurrent change');
  }

  /** One store operation took `ms`. */
  storeLatency(operation: string, ms: number): void {
    const name = FENCE_METRICS.STORE_OPERATION_LATENCY;
    isolated(`metric ${name}`, () =>
      this.instrument(name, () => this.meter.createHistogram(name, 'float', 'ms', 'Time of one checkpoint store operation, ms')).record(Math.max(0, ms), { operation }),
    );
  }

  /** Adds 1 to the counter `name`. */
  private count(name: string, description: string, tags?: MetricTags): void {
    isolated(`metric ${name}`, () => this.instrument(name, () => this.meter.createCounter(name, undefined, description)).add(1, tags));
  }

  private instrument<I extends MetricCounter | MetricHistogram>(name: string, create: () => I): I {
    let instrument = this.created.get(name) as I | undefined;
    if (instrument === undefined) {
      instrument = create();
      this.created.set(name, instrument);
    }
    return instrument;
  }
}
