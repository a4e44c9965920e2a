/**
 * docs/protocol.md#decide-and-validate: the recovery action for each status, after validating the
 * record and the full binding. Any binding difference is BINDING_CONFLICT, never a cache hit.
 */
import { ACTION_BY_STATUS, decideCheckpoint, type Binding, type CheckpointRecord } from '../../../src/protocol';
import { BINDING, caught, plainCopy, recordIn } from './fixtures';

describe('decideCheckpoint', () => {
  it.each([
    ['ready', 'execute', 0],
    ['executing', 'reconcile-execution', 1],
    ['uncertain', 'reconcile-execution', 2],
    ['completed', 'deliver', 2],
    ['delivering', 'reconcile-delivery', 3],
    ['delivered', 'none', 4],
  ] as const)('a %s record yields %s (docs/protocol.md#statuses-and-actions)', (status, action, revision) => {
    expect(decideCheckpoint(recordIn(status), BINDING)).toEqual({ action, status, revision });
    expect(ACTION_BY_STATUS[status]).toBe(action);
  });

  it('only ready yields execute', () => {
    expect(Object.entries(ACTION_BY_STATUS).filter(([, action]) => action === 'execute')).toEqual([['ready', 'execute']]);
  });

  it.each([
    ['namespace', 'tenant-b'],
    ['callId', 'toolu_02'],
    ['toolName', 'delete_ticket'],
    ['toolRevision', '4'],
    ['inputFingerprint', `sha256:${'0'.repeat(64)}`],
  ] as const)('a binding that differs only in %s is BINDING_CONFLICT naming that field', (field, value) => {
    for (const status of ['ready', 'completed'] as const) {
      const error = caught(() => decideCheckpoint(recordIn(status), { ...BINDING, [field]: value }));

      expect(error.code).toBe('BINDING_CONFLICT');
      expect(error.details).toEqual({ fields: [field] });
    }
  });

  it('names every differing field', () => {
    const other: Binding = { ...BINDING, namespace: 'tenant-b', toolRevision: '9' };

    expect(caught(() => decideCheckpoint(recordIn('completed'), other))).toEqual({
      code: 'BINDING_CONFLICT',
      details: { fields: ['namespace', 'toolRevision'] },
      message: 'BINDING_CONFLICT: the stored checkpoint for call "toolu_01" was made for a different namespace, toolRevision',
    });
  });

  it('compares exactly: a case or whitespace difference is a conflict', () => {
    expect(caught(() => decideCheckpoint(recordIn('completed'), { ...BINDING, toolName: 'Create_ticket' })).details).toEqual({ fields: ['toolName'] });
    expect(caught(() => decideCheckpoint(recordIn('completed'), { ...BINDING, callId: 'toolu_01 ' })).details).toEqual({ fields: ['callId'] });
  });

  it('a malformed caller binding is INVALID_ARGUMENT, not a conflict and not a match', () => {
    const { callId: _omitted, ...partial } = BINDING;

    expect(caught(() => decideCheckpoint(recordIn('ready'), partial as Binding))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'callId' } });
  });

  it('validates the record first: an invalid record is INVALID_CHECKPOINT (quarantine), never execute', () => {
    const broken = { ...plainCopy(recordIn('executing')), execution: null } as unknown as CheckpointRecord;

    expect(caught(() => decideCheckpoint(broken, BINDING))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'execution' } });
  });

  it('a record of schema version 3 is UNSUPPORTED_SCHEMA', () => {
    const future = { ...plainCopy(recordIn('ready')), schemaVersion: 3 } as unknown as CheckpointRecord;

    expect(caught(() => decideCheckpoint(future, BINDING)).code).toBe('UNSUPPORTED_SCHEMA');
  });

  it('does not mutate or freeze a plain record', () => {
    const record = plainCopy(recordIn('delivering'));
    const snapshot = plainCopy(record);

    decideCheckpoint(record, BINDING);

    expect(record).toEqual(snapshot);
    expect(Object.isFrozen(record)).toBe(false);
  });
});
