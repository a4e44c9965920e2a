/**
 * The recovery decision (docs/protocol.md#decide-and-validate): what a retried attempt must do with
 * the record it found. Pure: no I/O, no clock.
 */
import { CheckpointError } from './errors';
import { assertBinding, bindingDifferences, validateCheckpoint } from './record';
import type { Action, Binding, CheckpointRecord, Decision, Status } from './types';

/** docs/protocol.md#statuses-and-actions: status → recovery action. */
export const ACTION_BY_STATUS: Readonly<Record<Status, Action>> = Object.freeze({
  ready: 'execute',
  executing: 'reconcile-execution',
  uncertain: 'reconcile-execution',
  completed: 'deliver',
  delivering: 'reconcile-delivery',
  delivered: 'none',
});

/**
 * Validates `record` and the full `binding`, then returns the recovery action for the
 * record's status. Only `ready` ever yields `execute`.
 *
 * @returns `{ action, status, revision }`.
 * @throws {@link CheckpointError} BINDING_CONFLICT when any binding field differs (`details.fields` lists them); never a cache hit.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a malformed `binding`.
 * @throws {@link CheckpointError} INVALID_CHECKPOINT or UNSUPPORTED_SCHEMA from {@link validateCheckpoint}.
 * Pure: does not mutate `record`; reads no clock.
 */
export function decideCheckpoint(record: CheckpointRecord, binding: Binding): Decision {
  validateCheckpoint(record);
  assertBinding(binding);
  const fields = bindingDifferences(record.binding, binding);
  if (fields.length > 0) {
    throw new CheckpointError('BINDING_CONFLICT', `the stored checkpoint for call ${JSON.stringify(binding.callId)} was made for a different ${fields.join(', ')}`, {
      fields,
    });
  }
  return { action: ACTION_BY_STATUS[record.status], status: record.status, revision: record.revision };
}
