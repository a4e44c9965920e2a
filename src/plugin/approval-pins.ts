/**
 * The worker pin `requireApproval` (`../activities/fence/pins`) applied to the plugin's fenced
 * activity types: a call of such a type runs only with an approved intent digest in its call
 * header (`withApprovedIntent`); without one it is refused with APPROVAL_REQUIRED before any
 * claim. As for tools, this proves only that the workflow presented the digest this worker
 * computes (see the trust note in `../activities/fence/pins`), not that a person approved.
 */
import { resolvePins, type ResolvedPins } from '../activities/fence/pins';
import type { ToolCheckpointPluginOptions } from './options';

/** `requireApproval` split between the plugin's tools and its fenced activity types. */
export interface SplitApprovalPins {
  /** The tool names, for `createToolActivities` (undefined when the option is absent). */
  readonly tools: readonly string[] | undefined;
  /** The fenced activity types' pins, for the fence interceptor. */
  readonly fenced: ResolvedPins;
}

/**
 * Splits and validates `options.requireApproval`.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `requireApproval`) when it is not an
 *   array of non-empty strings or names neither a tool nor a fenced activity type of the plugin.
 */
export function splitApprovalPins(options: ToolCheckpointPluginOptions, fencedTypes: Iterable<string>): SplitApprovalPins {
  const fencedNames = new Set(fencedTypes);
  const toolNames = (options.tools ?? []).map((t) => t.name);
  const { requireApproval } = resolvePins({ requireApproval: options.requireApproval }, [...toolNames, ...fencedNames]);
  const forFenced = new Set([...requireApproval].filter((name) => fencedNames.has(name)));
  return {
    tools: options.requireApproval === undefined ? undefined : [...requireApproval].filter((name) => !fencedNames.has(name)),
    fenced: { tenants: null, tools: null, requireApproval: forFenced },
  };
}
