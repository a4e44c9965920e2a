/**
 * The store key of a checkpoint (docs/protocol.md#side-stores): a digest of the *full* binding, so
 * two bindings that differ in any of the five fields never share a row. Uses node:crypto (through
 * `digest.ts`), so workflow code must never import this file.
 */
import { canonicalJson } from '../checkpoint/canonical-json';
import { sha256Hex } from '../checkpoint/digest';
import { assertBinding, bindingSnapshot } from '../checkpoint/record';
import type { Binding } from '../checkpoint/types';

/** Every key starts with this prefix (the key format's version). */
export const CHECKPOINT_KEY_PREFIX = 'ck1-';

/**
 * The row key of `binding`: `ck1-` + 64 lowercase hex of SHA-256 over a domain-separation
 * line and the RFC 8785 canonical JSON of exactly the five binding fields (`namespace`,
 * `callId`, `toolName`, `toolRevision`, `inputFingerprint`). 68 characters, stable across
 * processes, hosts and releases; extra properties on `binding` are ignored.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field when the binding is incomplete or malformed.
 * @see docs/protocol.md#binding, docs/protocol.md#side-stores
 */
export function checkpointKey(binding: Binding): string {
  const cached = typeof binding === 'object' && binding !== null ? KEYS.get(binding) : undefined;
  if (cached !== undefined) return cached;
  assertBinding(binding);
  const text = canonicalJson(bindingSnapshot(binding));
  const key = `${CHECKPOINT_KEY_PREFIX}${sha256Hex(`ttc/checkpoint-key/1\n${text}`)}`;
  // Records share their frozen binding object across transitions; a frozen one cannot change.
  if (Object.isFrozen(binding)) KEYS.set(binding, key);
  return key;
}

const KEYS = new WeakMap<Binding, string>();
