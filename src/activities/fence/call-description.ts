/**
 * What a person approves: the description of a prepared call (docs/protocol.md#keys-and-digests),
 * one implementation for the agent's `describeToolCall` and the plugin's `describeFencedCall`.
 * Nothing is written and the tool does not run. No I/O.
 */
import { canonicalJson } from '../../checkpoint/canonical-json';
import { intentDigest } from '../../checkpoint/digest';
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { ToolCallDescription } from '../contract/contract';
import type { PreparedCall } from './prepare-call';

/**
 * The revision, intent digest, idempotency key, arguments and target of `call`. What the approver
 * reads is what the digest covers: the canonical JSON of the validated arguments and the target,
 * hashed again here, so a `target()` that is not deterministic is refused.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `toolName`, `field: 'target'`) when
 *   `target()` gives another value for the same arguments; NOT_JSON when the target is not JSON.
 */
export function describePreparedCall(call: PreparedCall): ToolCallDescription {
  const args = JSON.parse(canonicalJson(call.args, 'input')) as JsonValue;
  const target = JSON.parse(canonicalJson(call.tool.target?.(call.args as never) ?? null, 'target')) as JsonValue;
  if (intentDigest({ toolName: call.tool.name, toolRevision: call.tool.revision, args, target }) !== call.intentDigest) {
    throw new CheckpointError('INVALID_ARGUMENT', `tool ${call.tool.name}: target() gave another value for the same arguments; the call cannot be shown for approval`, {
      toolName: call.tool.name,
      field: 'target',
    });
  }
  return { toolRevision: call.tool.revision, intentDigest: call.intentDigest, idempotencyKey: call.idempotencyKey, arguments: args, target };
}
