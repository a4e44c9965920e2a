/**
 * Shared fixtures of the checkpoint unit and property tests: one binding, and one record per
 * status built through the real transitions (never by hand), at fixed times.
 */
import {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  createCheckpoint,
  markExecutionUncertain,
  type Binding,
  type CheckpointRecord,
  type Status,
} from '../../../src/protocol';
import { isCheckpointError, type CheckpointErrorCode } from '../../../src';

/** sha256 of the canonical text `{"q":1}`, computed with `printf '%s' '{"q":1}' | sha256sum`. */
export const FINGERPRINT_Q1 = 'sha256:6ae0f660046dadcf5fe8462c0e00a062db4c8d67be82f4098c5ea4208d19b076';

export const BINDING: Binding = Object.freeze({
  namespace: 'tenant-a',
  callId: 'toolu_01',
  toolName: 'create_ticket',
  toolRevision: '3',
  inputFingerprint: FINGERPRINT_Q1,
});

/** `at(n)`: n seconds after 2026-01-01T00:00:00.000Z, ISO-8601 UTC. */
export function at(seconds: number): string {
  return new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
}

export const RESULT = { ticket: { id: 'T-7', labels: ['a', 'b'] }, ok: true };

/** The owning fences of the fixtures. */
export const OWNER_ATTEMPT = 'attempt-1';
export const OWNER_DELIVERY = 'delivery-1';

/** One record per status, each reached through the transitions: revisions 0…4. */
export function recordIn(status: Status): CheckpointRecord {
  const ready = createCheckpoint(BINDING, { createdAt: at(0) });
  if (status === 'ready') return ready;
  const executing = claimExecution(ready, { attemptId: OWNER_ATTEMPT, at: at(1) }).next;
  if (status === 'executing') return executing;
  if (status === 'uncertain') return markExecutionUncertain(executing, { attemptId: OWNER_ATTEMPT, at: at(2), reason: 'socket reset after send' }).next;
  const completed = completeExecution(executing, { attemptId: OWNER_ATTEMPT, at: at(2), result: RESULT }).next;
  if (status === 'completed') return completed;
  const delivering = claimDelivery(completed, { deliveryId: OWNER_DELIVERY, at: at(3) }).next;
  if (status === 'delivering') return delivering;
  return completeDelivery(delivering, { deliveryId: OWNER_DELIVERY, at: at(4) }).next;
}

/** A plain, unfrozen deep copy, as a host that read the record with JSON.parse would hold. */
export function plainCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Runs `fn`, expects a CheckpointError and returns it (fails the test with what happened otherwise). */
export function caught(fn: () => unknown): { code: CheckpointErrorCode; details: Record<string, unknown>; message: string } {
  let result: unknown;
  try {
    result = fn();
  } catch (error) {
    if (isCheckpointError(error)) return { code: error.code, details: { ...error.details }, message: error.message };
    throw error;
  }
  throw new Error(`expected a CheckpointError, but the call returned ${JSON.stringify(result)}`);
}

/** True when `value` and every object reachable from it are frozen. */
export function isDeepFrozen(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (!Object.isFrozen(v)) return false;
    stack.push(...Object.values(v));
  }
  return true;
}
