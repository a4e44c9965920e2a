/**
 * The worker pins (`../activities/fence/pins`) applied to the plugin's `fence` entries. A fenced
 * activity type is registered by the worker itself and checkpointed under the plugin's `tenant`,
 * not under a tenant or tool its workflow input names, so the pins are checked once, when the
 * plugin is built, instead of on every call:
 * - `pinnedTenants`: the plugin's `tenant` must be pinned (the fence keeps every fenced call
 *   under it);
 * - `pinnedTools`: every `fence` entry must be pinned; an unpinned one is refused, not run
 *   unfenced. The plugin's `tools` are held to the pinned names among them, as before;
 * - `requireApproval`: applies to a fence entry through the approved intent digest of its call
 *   header (`./approval-pins`); without a digest the call is refused.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { ToolCheckpointPluginOptions } from './options';

/**
 * Checks `pinnedTenants` and `pinnedTools` against the plugin's `tenant` and fenced activity
 * types, and returns the `pinnedTools` the plugin's `tools` are held to: the pinned names that
 * are not fenced activity types (undefined when `pinnedTools` is absent).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT with field `tenant` when `pinnedTenants` is given
 *   and does not name the plugin's tenant; with field `pinnedTools` when a fenced activity type is
 *   not pinned, or when the plugin has tools and `pinnedTools` pins only fenced activity types.
 */
export function toolPinsAfterFence(options: ToolCheckpointPluginOptions, fencedTypes: Iterable<string>): readonly string[] | undefined {
  const tenant = options.tenant ?? 'default';
  const { pinnedTenants, pinnedTools } = options;
  if (Array.isArray(pinnedTenants) && !pinnedTenants.includes(tenant)) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `pinnedTenants does not name the plugin's tenant ${JSON.stringify(tenant)}, which every fenced activity is checkpointed under; pin it or set tenant`,
      { field: 'tenant' },
    );
  }
  if (!Array.isArray(pinnedTools)) return pinnedTools;
  const fenced = [...fencedTypes];
  const unpinned = fenced.filter((name) => !pinnedTools.includes(name));
  if (unpinned.length > 0) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `pinnedTools does not pin the fenced activity types ${unpinned.join(', ')}; pin them or leave them out of fence (a pinned worker fences only pinned activities)`,
      { field: 'pinnedTools' },
    );
  }
  const forTools = pinnedTools.filter((name) => !fenced.includes(name));
  if (forTools.length === 0 && (options.tools ?? []).length > 0) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `pinnedTools pins none of the plugin's tools (${(options.tools ?? []).map((t) => t.name).join(', ')}); pin them or leave them out of tools`,
      { field: 'pinnedTools' },
    );
  }
  return forTools.length === 0 ? undefined : forTools;
}
