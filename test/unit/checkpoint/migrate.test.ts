/**
 * docs/protocol.md#schema-version-and-migration: the schema version is explicit; v2 is current and
 * v1 is migrated by one explicit step; anything without a registered path is UNSUPPORTED_SCHEMA,
 * and a missing field never defaults.
 */
import { migrateCheckpoint, supportedSchemaVersions } from '../../../src/protocol';
import { caught, plainCopy, recordIn } from './fixtures';

describe('migrateCheckpoint', () => {
  it('supports schema versions 1 and 2 today (2 is current)', () => {
    expect(supportedSchemaVersions()).toEqual([1, 2]);
  });

  it('migrates a version-1 record to version 2: execution.deadlineAt is null (never a permissive default), nothing else changes', () => {
    const current = plainCopy(recordIn('uncertain')) as unknown as Record<string, unknown> & { execution: Record<string, unknown> };
    const { deadlineAt: _omitted, ...execution } = current.execution;
    const v1 = { ...current, schemaVersion: 1, execution };
    const snapshot = plainCopy(v1);

    const migrated = migrateCheckpoint(v1);

    expect(migrated).toEqual({ ...current, execution: { ...current.execution, deadlineAt: null } });
    expect(v1).toEqual(snapshot);
  });

  it('a version-1 ready record (no execution) migrates with only its version changed', () => {
    const v1 = { ...plainCopy(recordIn('ready')), schemaVersion: 1 };
    expect(migrateCheckpoint(v1)).toEqual(recordIn('ready'));
  });

  it('a version-1 record that already has execution.deadlineAt is INVALID_CHECKPOINT (version 1 had no such field)', () => {
    const v1 = { ...plainCopy(recordIn('executing')), schemaVersion: 1 };
    expect(caught(() => migrateCheckpoint(v1))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'execution' } });
  });

  it('returns a current-version record unchanged after validating it', () => {
    const record = plainCopy(recordIn('completed'));

    expect(migrateCheckpoint(record)).toEqual(recordIn('completed'));
  });

  it.each([
    ['3 (newer)', 3, '3'],
    ['0 (older, no migration registered)', 0, '0'],
    ['1.5', 1.5, '1.5'],
    ['"2" as text', '2', '"2"'],
    ['null', null, 'null'],
  ])('refuses schemaVersion %s with UNSUPPORTED_SCHEMA and leaves the value as it is', (_label, schemaVersion, actual) => {
    const value = { ...plainCopy(recordIn('ready')), schemaVersion };
    const snapshot = plainCopy(value);

    expect(caught(() => migrateCheckpoint(value))).toEqual({
      code: 'UNSUPPORTED_SCHEMA',
      details: { field: 'schemaVersion', actual, supported: ['1', '2'] },
      message: `UNSUPPORTED_SCHEMA: schemaVersion ${actual} is not supported; this code reads 1, 2`,
    });
    expect(value).toEqual(snapshot);
    expect(Object.isFrozen(value)).toBe(false);
  });

  it('refuses a value without schemaVersion as UNSUPPORTED_SCHEMA (missing), never assuming a version', () => {
    const { schemaVersion: _omitted, ...value } = plainCopy(recordIn('ready'));

    expect(caught(() => migrateCheckpoint(value))).toMatchObject({ code: 'UNSUPPORTED_SCHEMA', details: { actual: 'missing' } });
  });

  it.each([null, 'text', 42])('refuses %p with UNSUPPORTED_SCHEMA (no version can be read)', (value) => {
    expect(caught(() => migrateCheckpoint(value)).code).toBe('UNSUPPORTED_SCHEMA');
  });

  it('a current-version value with a missing field is INVALID_CHECKPOINT, never filled with a default', () => {
    const { delivery: _omitted, ...value } = plainCopy(recordIn('ready'));

    expect(caught(() => migrateCheckpoint(value))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: '$', missing: ['delivery'] } });
  });
});
