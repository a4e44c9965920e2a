/**
 * SPEC §2 "Migration": the schema version is explicit; v1 is current; anything without a
 * registered path is UNSUPPORTED_SCHEMA, and a missing field never defaults.
 */
import { migrateCheckpoint, supportedSchemaVersions } from '../../../src/index';
import { caught, plainCopy, recordIn } from './fixtures';

describe('migrateCheckpoint', () => {
  it('supports exactly schema version 1 today', () => {
    expect(supportedSchemaVersions()).toEqual([1]);
  });

  it('returns a current-version record unchanged after validating it', () => {
    const record = plainCopy(recordIn('completed'));

    expect(migrateCheckpoint(record)).toEqual(recordIn('completed'));
  });

  it.each([
    ['3 (newer)', 3, '3'],
    ['0 (older, no migration registered)', 0, '0'],
    ['1.5', 1.5, '1.5'],
    ['"1" as text', '1', '"1"'],
    ['null', null, 'null'],
  ])('refuses schemaVersion %s with UNSUPPORTED_SCHEMA and leaves the value as it is', (_label, schemaVersion, actual) => {
    const value = { ...plainCopy(recordIn('ready')), schemaVersion };
    const snapshot = plainCopy(value);

    expect(caught(() => migrateCheckpoint(value))).toEqual({
      code: 'UNSUPPORTED_SCHEMA',
      details: { field: 'schemaVersion', actual, supported: ['1'] },
      message: `UNSUPPORTED_SCHEMA: schemaVersion ${actual} is not supported; this code reads 1`,
    });
    expect(value).toEqual(snapshot);
    expect(Object.isFrozen(value)).toBe(false);
  });

  it('refuses a value without schemaVersion as UNSUPPORTED_SCHEMA (missing), never assuming version 1', () => {
    const { schemaVersion: _omitted, ...value } = plainCopy(recordIn('ready'));

    expect(caught(() => migrateCheckpoint(value))).toMatchObject({ code: 'UNSUPPORTED_SCHEMA', details: { actual: 'missing' } });
  });

  it.each([null, 'text', 42])('refuses %p with UNSUPPORTED_SCHEMA (no version can be read)', (value) => {
    expect(caught(() => migrateCheckpoint(value)).code).toBe('UNSUPPORTED_SCHEMA');
  });

  it('a version-1 value with a missing field is INVALID_CHECKPOINT, never filled with a default', () => {
    const { delivery: _omitted, ...value } = plainCopy(recordIn('ready'));

    expect(caught(() => migrateCheckpoint(value))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: '$', missing: ['delivery'] } });
  });
});
