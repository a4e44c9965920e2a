/**
 * Activity name collisions between the plugin and the worker it configures. `SimplePlugin`
 * merges its activities over the worker's, the plugin winning: a user's activity named like a
 * tool would be replaced silently, and calls meant for it would run the tool.
 */
import { CheckpointError } from '../checkpoint/errors';

/**
 * Refuses `existing` activities (the worker's own, or an earlier plugin's) that register a name
 * `own` also registers with another function. The plugin's own functions (the plugin applied
 * twice, on the worker and its connection) pass.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the activity types.
 */
export function refuseActivityCollisions(existing: object | undefined, own: object | undefined): void {
  if (existing === undefined || own === undefined) return;
  const mine = own as Record<string, unknown>;
  const theirs = existing as Record<string, unknown>;
  const clashes = Object.keys(mine).filter((name) => Object.prototype.hasOwnProperty.call(theirs, name) && theirs[name] !== mine[name]);
  if (clashes.length === 0) return;
  const names = clashes.map((n) => JSON.stringify(n)).join(', ');
  throw new CheckpointError(
    'INVALID_ARGUMENT',
    `ToolCheckpointPlugin registers activity type ${names}, which the worker already has: rename the tool, or fence the existing activity with the \`fence\` option instead of \`tools\``,
    { field: 'tools', activityTypes: clashes.join(',') },
  );
}
