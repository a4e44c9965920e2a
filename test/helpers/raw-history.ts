/**
 * Temporal history as a reader without the payload codec sees it, for tests asserting what
 * Temporal can read. With the codec on, every payload the SDK hands to the codec is encrypted
 * (inputs, results, failures, activity summaries in `userMetadata`). Three kinds of plaintext
 * remain on a worker without `ToolCheckpointPlugin` (its `_ttc-call` activity header is a fourth:
 * the SDK encodes workflow completions with `skipHeaders`; see
 * test/plugin/bundle-plugins-header-history.test.ts), all labels that Temporal must read or that
 * the SDK writes past the codec:
 *
 * - activity type names (`activityType.name` of ActivityTaskScheduled events and of activity
 *   failures): each tool is its own activity type, so the tool name is plaintext;
 * - the `core_patch` marker of a `patched()` call: sdk-core writes its `patch-data` payload
 *   itself as `json/plain` (`{"id":…,"deprecated":…}`), never through the codec;
 * - the `TemporalChangeVersion` search attribute the SDK upserts with the patch ids (search
 *   attributes are never encoded);
 * - the agent run's own search attributes: `TtcNeedsPerson` (a boolean) and
 *   `TtcWaitingCalls` (the ids of the calls waiting for a person, never arguments or results),
 *   which the server must read to index them.
 *
 * {@link stripPlaintextLabels} removes exactly those from a history (a decoded protobuf message,
 * or the Temporal CLI's protobuf JSON) and returns what it removed, so a test can search the rest
 * for data and require every remaining payload to be encrypted.
 */
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** The patch id agentWorkflow records before scheduling a tool as its own activity type. */
export const TOOL_ACTIVITY_TYPES_PATCH = 'ttc-tool-activity-types';
/** The patch id `ttc-long-runs` (conversation by reference, concurrent calls, continue-as-new), marked at the start of every new run. */
export const LONG_RUNS_PATCH = 'ttc-long-runs';
/** Patch id `ttc-conversation-branches` (the conversation log forks per run). */
export const CONVERSATION_BRANCHES_PATCH = 'ttc-conversation-branches';
/** Patch id `ttc-reset-safe-calls` (calls addressed per run, claimed per occurrence of their intent). */
export const RESET_SAFE_CALLS_PATCH = 'ttc-reset-safe-calls';

/** What {@link stripPlaintextLabels} removed. */
export interface PlaintextLabels {
  /** Activity type names, in history order (repeats included). */
  readonly activityTypes: string[];
  /** Patch ids of `core_patch` markers and of `TemporalChangeVersion` values. */
  readonly patchIds: string[];
  /** Values of `TtcNeedsPerson`, in history order (the start's, then each upsert's). */
  readonly needsPerson: boolean[];
  /** Values of `TtcWaitingCalls` (call ids), in history order. */
  readonly waitingCalls: string[][];
}

/**
 * Removes the plaintext labels (see the module comment) from `tree` in place and returns them.
 * `tree` is a decoded protobuf message (bytes as Uint8Array) or protobuf JSON (bytes as base64).
 * Throws when a patch marker or change-version value holds anything but patch ids.
 */
export function stripPlaintextLabels(tree: unknown): PlaintextLabels {
  const labels: PlaintextLabels = { activityTypes: [], patchIds: [], needsPerson: [], waitingCalls: [] };
  const stack: unknown[] = [tree];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object' || value instanceof Uint8Array) continue;
    if (Array.isArray(value)) {
      stack.push(...(value as unknown[]));
      continue;
    }
    const record = value as Record<string, unknown>;
    const activityType = record.activityType as { name?: unknown } | null | undefined;
    if (typeof activityType?.name === 'string') {
      labels.activityTypes.push(activityType.name);
      delete record.activityType;
    }
    const details = record.details as Record<string, { payloads?: unknown[] }> | undefined;
    if (record.markerName === 'core_patch' && details?.['patch-data'] !== undefined) {
      for (const payload of details['patch-data'].payloads ?? []) labels.patchIds.push(patchIdOf(payload));
      delete details['patch-data'];
    }
    const indexed = record.indexedFields as Record<string, unknown> | undefined;
    if (indexed?.TemporalChangeVersion != null) {
      labels.patchIds.push(...changeVersionsOf(indexed.TemporalChangeVersion));
      delete indexed.TemporalChangeVersion;
    }
    if (indexed?.TtcNeedsPerson != null) {
      const value = jsonPlain(indexed.TtcNeedsPerson, 'TtcNeedsPerson');
      if (typeof value !== 'boolean') throw new Error(`TtcNeedsPerson holds more than a boolean: ${JSON.stringify(value)}`);
      labels.needsPerson.push(value);
      delete indexed.TtcNeedsPerson;
    }
    if (indexed?.TtcWaitingCalls != null) {
      const value = jsonPlain(indexed.TtcWaitingCalls, 'TtcWaitingCalls');
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new Error(`TtcWaitingCalls holds more than call ids: ${JSON.stringify(value)}`);
      labels.waitingCalls.push(value);
      delete indexed.TtcWaitingCalls;
    }
    stack.push(...Object.values(record));
  }
  return labels;
}

/** The raw history of a run (a client without the codec) with its labels stripped, and its protobuf bytes to search. */
export function rawHistoryView(history: temporal.api.history.v1.IHistory): { history: temporal.api.history.v1.History; bytes: Buffer; labels: PlaintextLabels } {
  const copy = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
  const labels = stripPlaintextLabels(copy);
  return { history: copy, bytes: Buffer.from(temporal.api.history.v1.History.encode(copy).finish()), labels };
}

function patchIdOf(payload: unknown): string {
  const value = jsonPlain(payload, 'core_patch marker');
  const { id, ...rest } = (value ?? {}) as { id?: unknown; deprecated?: unknown };
  const extra = Object.keys(rest).filter((key) => key !== 'deprecated');
  if (typeof id !== 'string' || extra.length > 0) throw new Error(`a core_patch marker holds more than a patch id: ${JSON.stringify(value)}`);
  return id;
}

function changeVersionsOf(payload: unknown): string[] {
  const value = jsonPlain(payload, 'TemporalChangeVersion');
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new Error(`TemporalChangeVersion holds more than patch ids: ${JSON.stringify(value)}`);
  return value;
}

/** The JSON value of a `json/plain` payload (bytes as Uint8Array or base64). */
function jsonPlain(payload: unknown, where: string): unknown {
  const { metadata, data } = payload as { metadata?: Record<string, unknown>; data?: unknown };
  if (bytesOf(metadata?.encoding).toString() !== 'json/plain') throw new Error(`${where} payload is not json/plain`);
  return JSON.parse(bytesOf(data).toString('utf8'));
}

function bytesOf(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value);
  return Buffer.from(typeof value === 'string' ? value : '', 'base64');
}

/** Every Payload in a decoded protobuf message (anything with `data` bytes and a `metadata` map). */
export function payloadsIn(value: unknown, found: Payload[] = []): Payload[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return found;
  if (Array.isArray(value)) {
    for (const item of value) payloadsIn(item, found);
    return found;
  }
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && typeof record.metadata === 'object' && record.metadata !== null) {
    found.push(record as Payload);
    return found;
  }
  for (const key of Object.keys(record)) payloadsIn(record[key], found);
  return found;
}
