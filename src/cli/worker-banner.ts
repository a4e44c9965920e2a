/**
 * The line `ttc worker` prints once it polls: where it polls and what a run on it may use, with
 * its pins (TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL) applied, so an operator sees what the
 * worker serves rather than every tool the module registers.
 */
import type { Config } from '../config';

/** What {@link workerBanner} describes. */
export interface WorkerBannerInput {
  /** Worker identity (or the process id when none was given). */
  readonly identity: string | number;
  readonly config: Pick<Config, 'temporal' | 'pins'> & { readonly keys?: Pick<Config['keys'], 'approvalGrantKeys'> };
  /** Names of the tools the worker registers, in registration order. */
  readonly tools: readonly string[];
  /** Names of the model adapters the worker offers. */
  readonly models: readonly string[];
  /** Where the worker serves Prometheus metrics (`--metrics-port`); absent: it serves none. */
  readonly metricsUrl?: string;
}

/**
 * The banner text: task queue and address; the tenants served (`any` when TTC_TENANTS is unset);
 * the tools a run may use, the registered tools within TTC_TOOLS (all registered tools when it
 * is unset); the tools that run only after a person approves (`none` when TTC_REQUIRE_APPROVAL
 * is unset), and whether approvals must be signed grants (the key ids of TTC_APPROVAL_GRANT_KEYS); the models; and, with `--metrics-port`, where Prometheus metrics are served. Raw
 * text: the caller prints it through `terminal-safe.ts`.
 */
export function workerBanner(input: WorkerBannerInput): string {
  const { temporal, pins } = input.config;
  const list = (names: readonly string[], empty: string): string => (names.length === 0 ? empty : names.join(', '));
  const pinnedTools = pins.tools === null ? null : new Set(pins.tools);
  const usable = input.tools.filter((name) => pinnedTools === null || pinnedTools.has(name));
  const approval = pins.requireApproval.filter((name) => usable.includes(name));
  return [
    `worker ${input.identity} polling task queue ${temporal.taskQueue} on ${temporal.address}`,
    `tenants: ${pins.tenants === null ? 'any (TTC_TENANTS unset)' : list(pins.tenants, 'none')}`,
    `tools: ${list(usable, 'none')}${pinnedTools === null ? '' : ` (pinned by TTC_TOOLS; ${input.tools.length} registered)`}`,
    `approval required: ${list(approval, 'none')}${approvalMode(input.config.keys?.approvalGrantKeys ?? null)}`,
    `models: ${list(input.models, 'none')}`,
    ...(input.metricsUrl === undefined ? [] : [`metrics: ${input.metricsUrl} (Prometheus)`]),
  ].join('; ');
}

/** How this worker checks approvals: signed grants under the named keys, or the unsigned digest check. */
function approvalMode(keys: readonly { readonly keyId: string }[] | null): string {
  return keys === null ? ' (unsigned: TTC_APPROVAL_GRANT_KEYS unset)' : ` (signed grants, keys ${keys.map((k) => k.keyId).join(', ')})`;
}
