/**
 * Worker pins: the trust boundary a worker controls. A run's tenant, tool
 * list, approval policy and model come from its workflow input, so whoever can start a workflow
 * on the task queue chooses them. A pinned worker's activities refuse input outside the pins
 * before any tool or model runs. On attempt 1 nothing is written; on a later attempt the refusal
 * settles like every refusal of a call that an earlier attempt (perhaps on a worker with other
 * pins) may have claimed: a stored result is delivered, an unfinished claim waits and pauses,
 * and otherwise the refusal is stored as the call's result first (docs/protocol.md#nothing-applied,
 * `call-failure.ts`):
 * - `pinnedTenants`: a call or model turn for another tenant → `NOT_PINNED` (field `tenant`);
 * - `pinnedTools`: a call of another tool, or a model turn offering one → `NOT_PINNED`
 *   (field `toolName` / `tools`);
 * - `requireApproval`: a call of such a tool without the intent digest a person approved
 *   (`expectedIntentDigest`, set by the agent workflow only after `approveCallUpdate`) →
 *   `APPROVAL_REQUIRED`. This proves only that the caller presented the digest this worker
 *   computes: any workflow code in the namespace can obtain it from `describeToolCall` and run
 *   the activity on the task queue directly. It keeps the agent workflow's approval step from
 *   being skipped; it does not prove a person approved (restrict who runs workers and workflows).
 *   The refusal is `assertApprovalGiven` (`./approval-checks`).
 * Models are pinned by registration: `runModelTurn` refuses an adapter the worker does not have
 * (`UNKNOWN_MODEL`). Configuration: TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL, TTC_MODELS
 * (`config.ts`).
 */
import { CheckpointError } from '../../checkpoint/errors';

/** What a worker serves whatever its workflow input asks for; absent or undefined: not pinned. */
export interface WorkerPins {
  /** Tenants this worker serves. */
  readonly pinnedTenants?: readonly string[];
  /** Tools a run may offer the model and call; each must be registered on the worker. */
  readonly pinnedTools?: readonly string[];
  /** Tools whose calls run only under an approved intent digest; each must be registered (and pinned, when tools are). */
  readonly requireApproval?: readonly string[];
}

/** Pins checked once, as sets. */
export interface ResolvedPins {
  readonly tenants: ReadonlySet<string> | null;
  readonly tools: ReadonlySet<string> | null;
  readonly requireApproval: ReadonlySet<string>;
}

/**
 * Validates `pins` against the registered tool names.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the option: an empty pin list, an entry
 *   that is not a non-empty string, a pinned or approval-required tool that is not registered,
 *   an approval-required tool outside `pinnedTools`.
 */
export function resolvePins(pins: WorkerPins, registered: Iterable<string>): ResolvedPins {
  const known = new Set(registered);
  const set = (field: keyof WorkerPins, allowEmpty: boolean): Set<string> | null => {
    const list = pins[field];
    if (list === undefined) return null;
    if (!Array.isArray(list) || (!allowEmpty && list.length === 0)) throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a non-empty array of names`, { field });
    for (const name of list as unknown[]) {
      if (typeof name !== 'string' || name.length === 0)
        throw new CheckpointError('INVALID_ARGUMENT', `${field} must hold non-empty strings, got ${JSON.stringify(name)}`, { field });
    }
    return new Set(list);
  };
  const tenants = set('pinnedTenants', false);
  const tools = set('pinnedTools', false);
  const requireApproval = set('requireApproval', true) ?? new Set<string>();
  for (const [field, names] of [
    ['pinnedTools', tools],
    ['requireApproval', requireApproval],
  ] as const) {
    const missing = [...(names ?? [])].filter((n) => !known.has(n));
    if (missing.length > 0) throw new CheckpointError('INVALID_ARGUMENT', `${field} names ${missing.join(', ')}, which this worker does not register`, { field });
  }
  const unpinned = tools === null ? [] : [...requireApproval].filter((n) => !tools.has(n));
  if (unpinned.length > 0)
    throw new CheckpointError('INVALID_ARGUMENT', `requireApproval names ${unpinned.join(', ')}, which pinnedTools does not pin`, { field: 'requireApproval' });
  return { tenants, tools, requireApproval };
}

/** @throws {@link CheckpointError} NOT_PINNED (field `tenant`) unless the worker serves `tenant`. */
export function assertTenantPinned(pins: ResolvedPins, tenant: unknown): void {
  if (pins.tenants === null || (typeof tenant === 'string' && pins.tenants.has(tenant))) return;
  throw new CheckpointError('NOT_PINNED', `this worker does not serve tenant ${JSON.stringify(tenant ?? null)}; the tool was not run`, { field: 'tenant' });
}

/** @throws {@link CheckpointError} NOT_PINNED (field `toolName`) unless the worker serves the tool. */
export function assertToolPinned(pins: ResolvedPins, toolName: unknown): void {
  if (pins.tools === null || (typeof toolName === 'string' && pins.tools.has(toolName))) return;
  throw new CheckpointError('NOT_PINNED', `this worker does not serve tool ${JSON.stringify(toolName ?? null)}; the tool was not run`, { field: 'toolName' });
}

/** @throws {@link CheckpointError} NOT_PINNED (field `tools`) when a model turn offers a tool the worker does not serve. */
export function assertOfferedToolsPinned(pins: ResolvedPins, offered: unknown): void {
  if (pins.tools === null) return;
  const names: unknown[] = Array.isArray(offered) ? offered : [offered];
  const outside = names.filter((n) => typeof n !== 'string' || !pins.tools!.has(n));
  if (outside.length === 0) return;
  throw new CheckpointError('NOT_PINNED', `the run offers tools this worker does not serve: ${outside.map((n) => JSON.stringify(n)).join(', ')}; the model was not called`, {
    field: 'tools',
  });
}
