/**
 * Schema migrations (docs/protocol.md#schema-version-and-migration). The schema version is
 * explicit; an older version is migrated only by an explicit, tested step registered here, anything
 * else is rejected. A missing field never defaults to a permissive value. Pure.
 */
import { CheckpointError } from './errors';
import { validateCheckpoint } from './record';
import { CURRENT_SCHEMA_VERSION, type CheckpointRecord } from './types';

/**
 * Registered steps: `MIGRATIONS[n]` turns a version-n record into a version-(n+1) record. Each
 * step copies, never mutates, and adds only what the newer version needs, never a permissive
 * default.
 * - 1 → 2: `execution.deadlineAt` is null (a version-1 claim declared no deadline; the fence then
 *   uses the tool's current deadline, as version-1 code did).
 */
const MIGRATIONS: Readonly<Record<number, (value: Record<string, unknown>) => Record<string, unknown>>> = Object.freeze({
  1: (value: Record<string, unknown>) => {
    const execution = value.execution;
    const next: Record<string, unknown> = { ...value, schemaVersion: 2 };
    if (typeof execution === 'object' && execution !== null && !Array.isArray(execution)) {
      if (Object.prototype.hasOwnProperty.call(execution, 'deadlineAt')) {
        throw new CheckpointError('INVALID_CHECKPOINT', 'execution: a version-1 record has no field deadlineAt', { field: 'execution', unknown: ['deadlineAt'] });
      }
      next.execution = { ...execution, deadlineAt: null };
    }
    return next;
  },
});

/** Versions `migrateCheckpoint` accepts: the current one and every version with a path to it. */
export function supportedSchemaVersions(): number[] {
  const versions = [CURRENT_SCHEMA_VERSION as number];
  for (let v = CURRENT_SCHEMA_VERSION - 1; v >= 0 && MIGRATIONS[v] !== undefined; v -= 1) versions.unshift(v);
  return versions;
}

/**
 * Returns `value` as a validated current-version record, migrating older versions step by
 * step. Does not mutate `value`.
 *
 * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA for a version with no migration path
 *   (newer, unknown, missing or not an integer); INVALID_CHECKPOINT when the result fails validation.
 */
export function migrateCheckpoint(value: unknown): CheckpointRecord {
  const version = readSchemaVersion(value);
  let current = value as Record<string, unknown>;
  for (let v = version; v < CURRENT_SCHEMA_VERSION; v += 1) {
    current = MIGRATIONS[v]!(current);
  }
  validateCheckpoint(current);
  return current as unknown as CheckpointRecord;
}

/**
 * Reads `schemaVersion` first, before any other check, so an unknown version is always
 * reported as UNSUPPORTED_SCHEMA.
 *
 * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA when the version has no migration path.
 */
export function readSchemaVersion(value: unknown): number {
  const version = typeof value === 'object' && value !== null ? (value as { schemaVersion?: unknown }).schemaVersion : undefined;
  const supported = supportedSchemaVersions();
  if (typeof version !== 'number' || !supported.includes(version)) {
    throw new CheckpointError('UNSUPPORTED_SCHEMA', `schemaVersion ${JSON.stringify(version) ?? 'missing'} is not supported; this code reads ${supported.join(', ')}`, {
      field: 'schemaVersion',
      actual: JSON.stringify(version) ?? 'missing',
      supported: supported.map(String),
    });
  }
  return version;
}
