/**
 * The identity of one item of a batch call (`ctx.forEachItem`): a child binding of the
 * call's binding, and an idempotency key derived from the call's key. Both are tagged canonical
 * JSON arrays, so no item can share a binding or a key with a call (the model names calls, never
 * items) or with another item. Pure.
 */
import { assertIdentifier } from './bounds';
import { canonicalJson } from './canonical-json';
import { CheckpointError } from './errors';
import { fingerprintInput, sha256Hex } from './digest';
import type { Binding } from './types';

/** Longest item key, UTF-16 code units. */
export const MAX_ITEM_KEY_LENGTH = 256;

/** The largest item generation (raised each time a person proves an item's effect absent). */
export const MAX_ITEM_GENERATION = 1_000_000;

/** Where one item sits: its key within the call, its position, and its generation (1 first). */
export interface ItemRef {
  readonly key: string;
  readonly index: number;
  readonly generation: number;
}

/**
 * Checks an item key: 1 to {@link MAX_ITEM_KEY_LENGTH} characters, no control characters or lone surrogates.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `itemKey`).
 */
export function assertItemKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_ITEM_KEY_LENGTH || /[\u0000-\u001f\u007f-\u009f]/.test(key) || !key.isWellFormed()) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `an item key must be a string of 1 to ${MAX_ITEM_KEY_LENGTH} characters without control characters, got ${typeof key === 'string' ? JSON.stringify(key.slice(0, 64)) : typeof key}`,
      { field: 'itemKey' },
    );
  }
}

/** @throws {@link CheckpointError} INVALID_ARGUMENT for a generation that is not an integer from 1 to {@link MAX_ITEM_GENERATION}. */
export function assertItemGeneration(generation: unknown): asserts generation is number {
  if (!Number.isSafeInteger(generation) || (generation as number) < 1 || (generation as number) > MAX_ITEM_GENERATION) {
    throw new CheckpointError('INVALID_ARGUMENT', `an item generation must be an integer from 1 to ${MAX_ITEM_GENERATION}, got ${JSON.stringify(generation)}`, {
      field: 'generation',
    });
  }
}

/**
 * The binding of item `key` (generation `generation`) of the call bound by `call`: the call's
 * namespace, tool and revision; call id `["ttc/item/1",<call's binding call id>,<key>,<generation>]`;
 * input fingerprint over the call's fingerprint and the item (so, like the call's, it changes with
 * the idempotency-key secret).
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad key or generation, or a call id over the bound; NOT_JSON for an item that is not JSON.
 */
export function itemBinding(call: Binding, key: string, generation: number, item: unknown): Binding {
  assertItemKey(key);
  assertItemGeneration(generation);
  const callId = canonicalJson(['ttc/item/1', call.callId, key, generation], 'callId');
  assertIdentifier(callId, 'callId');
  return {
    namespace: call.namespace,
    callId,
    toolName: call.toolName,
    toolRevision: call.toolRevision,
    inputFingerprint: fingerprintInput(['ttc/item-input/1', call.inputFingerprint, item]),
  };
}

/**
 * The idempotency key of item `key` (generation `generation`) of the call whose key is
 * `callKey`: `ttci-` + 64 lowercase hex of SHA-256 over `["ttc/item-key/1",<callKey>,<key>,<generation>]`
 * (69 characters). Stable across attempts; a call key derived with a secret makes it unpredictable too.
 * @see draft-ietf-httpapi-idempotency-key-header §2
 */
export function itemIdempotencyKey(callKey: string, key: string, generation: number): string {
  assertItemKey(key);
  assertItemGeneration(generation);
  return `ttci-${sha256Hex(canonicalJson(['ttc/item-key/1', callKey, key, generation]))}`;
}
