/**
 * docs/protocol.md#record and #decide-and-validate: creating a checkpoint, and validating one
 * (schema version first, then exact fields, binding, status, revision, timestamps and the
 * invariants of each status).
 */
import { createCheckpoint, STATUSES, validateCheckpoint, type Status } from '../../../src/protocol';
import { at, BINDING, caught, FINGERPRINT_Q1, isDeepFrozen, plainCopy, recordIn } from './fixtures';

type Plain = Record<string, any>;

describe('createCheckpoint', () => {
  it('creates a frozen ready record at revision 0 with schema version 2', () => {
    const record = createCheckpoint(BINDING, { createdAt: at(0) });

    expect(record).toEqual({
      schemaVersion: 2,
      binding: { namespace: 'tenant-a', callId: 'toolu_01', toolName: 'create_ticket', toolRevision: '3', inputFingerprint: FINGERPRINT_Q1 },
      status: 'ready',
      revision: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      execution: null,
      result: null,
      delivery: null,
    });
    expect(isDeepFrozen(record)).toBe(true);
    expect(validateCheckpoint(record)).toBe(true);
  });

  it("keeps only the five binding fields and does not freeze or keep the caller's binding", () => {
    const binding = { ...BINDING, extra: 'not stored' };

    const record = createCheckpoint(binding, { createdAt: at(0) });

    expect(Object.keys(record.binding).sort()).toEqual(['callId', 'inputFingerprint', 'namespace', 'toolName', 'toolRevision']);
    expect(record.binding).not.toBe(binding);
    expect(Object.isFrozen(binding)).toBe(false);
  });

  it.each([
    ['not sha256-prefixed', 'md5:abc'],
    ['upper-case hex', `sha256:${'A'.repeat(64)}`],
    ['63 hex digits', `sha256:${'a'.repeat(63)}`],
    ['missing', undefined],
  ])('refuses an inputFingerprint that is %s with INVALID_ARGUMENT', (_label, inputFingerprint) => {
    expect(caught(() => createCheckpoint({ ...BINDING, inputFingerprint: inputFingerprint as string }, { createdAt: at(0) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'inputFingerprint' },
    });
  });

  it('refuses a binding that is not an object with INVALID_ARGUMENT naming binding', () => {
    expect(caught(() => createCheckpoint(null as never, { createdAt: at(0) }))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: { field: 'binding', actual: 'null' },
      message: 'INVALID_ARGUMENT: binding must be an object with namespace, callId, toolName, toolRevision and inputFingerprint',
    });
  });

  it.each([undefined, '2026-01-01', '2026-01-01T00:00:00', '2026-13-01T00:00:00Z'])('refuses createdAt %p with INVALID_ARGUMENT', (createdAt) => {
    expect(caught(() => createCheckpoint(BINDING, { createdAt: createdAt as string }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'createdAt' } });
  });

  it('accepts fractional seconds up to nanoseconds and none at all', () => {
    expect(createCheckpoint(BINDING, { createdAt: '2026-01-01T00:00:00.123456789Z' }).createdAt).toBe('2026-01-01T00:00:00.123456789Z');
    expect(createCheckpoint(BINDING, { createdAt: '2026-01-01T00:00:00Z' }).createdAt).toBe('2026-01-01T00:00:00Z');
  });
});

describe('validateCheckpoint', () => {
  it.each(STATUSES)('accepts the %s record the transitions made, frozen or as plain JSON', (status) => {
    expect(validateCheckpoint(recordIn(status))).toBe(true);
    expect(validateCheckpoint(plainCopy(recordIn(status)))).toBe(true);
  });

  const CASES: Array<[string, Status, (r: Plain) => void, Record<string, unknown>]> = [
    ['an unknown top-level field', 'ready', (r) => (r.owner = 'me'), { field: '$', missing: [], unknown: ['owner'] }],
    ['a missing top-level field', 'ready', (r) => delete r.delivery, { field: '$', missing: ['delivery'], unknown: [] }],
    ['an unknown binding field', 'ready', (r) => (r.binding.workflowId = 'wf'), { field: 'binding', missing: [], unknown: ['workflowId'] }],
    ['an empty binding callId', 'ready', (r) => (r.binding.callId = ''), { field: 'binding', reason: 'INVALID_ARGUMENT' }],
    ['a binding without inputFingerprint', 'ready', (r) => delete r.binding.inputFingerprint, { field: 'binding', reason: 'INVALID_ARGUMENT' }],
    ['an unknown status', 'ready', (r) => (r.status = 'pending'), { field: 'status' }],
    ['a fractional revision', 'executing', (r) => (r.revision = 1.5), { field: 'revision' }],
    ['a negative revision', 'ready', (r) => (r.revision = -1), { field: 'revision' }],
    ['a revision given as text', 'ready', (r) => (r.revision = '0'), { field: 'revision' }],
    ['an executing record at revision 0', 'executing', (r) => (r.revision = 0), { field: 'revision' }],
    ['a completed record at revision 1', 'completed', (r) => (r.revision = 1), { field: 'revision' }],
    ['a delivering record at revision 2', 'delivering', (r) => (r.revision = 2), { field: 'revision' }],
    ['a delivered record at revision 3', 'delivered', (r) => (r.revision = 3), { field: 'revision' }],
    ['a malformed createdAt', 'ready', (r) => (r.createdAt = 'today'), { field: 'createdAt', reason: 'INVALID_ARGUMENT' }],
    ['updatedAt before createdAt', 'executing', (r) => (r.updatedAt = '2025-12-31T23:59:59.000Z'), { field: 'updatedAt' }],
    ['a ready record with an execution', 'ready', (r) => (r.execution = plainCopy(recordIn('executing').execution)), { field: 'execution' }],
    ['an executing record without an execution', 'executing', (r) => (r.execution = null), { field: 'execution' }],
    ['an execution with an unknown field', 'executing', (r) => (r.execution.pid = 42), { field: 'execution', missing: [], unknown: ['pid'] }],
    ['an execution with an empty attemptId', 'executing', (r) => (r.execution.attemptId = ''), { field: 'execution', reason: 'INVALID_ARGUMENT' }],
    ['a claim before the record was created', 'executing', (r) => (r.execution.claimedAt = '2025-12-31T00:00:00.000Z'), { field: 'execution.claimedAt' }],
    ['a claim after the last update', 'executing', (r) => (r.execution.claimedAt = at(99)), { field: 'execution.claimedAt' }],
    ['an executing record that has finished', 'executing', (r) => (r.execution.finishedAt = at(1)), { field: 'execution.finishedAt' }],
    ['a completed record that never finished', 'completed', (r) => (r.execution.finishedAt = null), { field: 'execution.finishedAt' }],
    [
      'an uncertain record without uncertainAt or reason',
      'uncertain',
      (r) => ((r.execution.uncertainAt = null), (r.execution.uncertainReason = null)),
      { field: 'execution.uncertainAt' },
    ],
    ['an uncertainAt without a reason', 'uncertain', (r) => (r.execution.uncertainReason = null), { field: 'execution.uncertainReason' }],
    ['an uncertain reason with a lone surrogate', 'uncertain', (r) => (r.execution.uncertainReason = 'lost \ud800'), { field: 'execution.uncertainReason' }],
    ['an uncertain reason over 2,048 characters', 'uncertain', (r) => (r.execution.uncertainReason = 'r'.repeat(2049)), { field: 'execution.uncertainReason' }],
    ['an executing record marked uncertain', 'executing', (r) => ((r.execution.uncertainAt = at(1)), (r.execution.uncertainReason = 'x')), { field: 'execution.uncertainAt' }],
    ['a completed record without a result', 'completed', (r) => (r.result = null), { field: 'result' }],
    ['a result without a payload', 'completed', (r) => (r.result = {}), { field: 'result', missing: ['payload'], unknown: [] }],
    ['a result payload that is not JSON', 'completed', (r) => (r.result.payload = { x: Number.NaN }), { field: 'result.payload', reason: 'NOT_JSON' }],
    ['an executing record with a result', 'executing', (r) => (r.result = { payload: 1 }), { field: 'result' }],
    ['an executing record with a delivery', 'executing', (r) => (r.delivery = plainCopy(recordIn('delivering').delivery)), { field: 'delivery' }],
    ['a delivering record without a delivery', 'delivering', (r) => (r.delivery = null), { field: 'delivery' }],
    ['a delivered record without deliveredAt', 'delivered', (r) => (r.delivery.deliveredAt = null), { field: 'delivery' }],
    ['a delivering record that was already delivered', 'delivering', (r) => (r.delivery.deliveredAt = at(3)), { field: 'delivery' }],
    ['a delivery claimed before the execution finished', 'delivering', (r) => (r.delivery.claimedAt = at(1)), { field: 'delivery.claimedAt' }],
    ['a delivery with an empty deliveryId', 'delivering', (r) => (r.delivery.deliveryId = ''), { field: 'delivery', reason: 'INVALID_ARGUMENT' }],
  ];

  it.each(CASES)('refuses %s with INVALID_CHECKPOINT naming the field', (_label, status, mutate, details) => {
    const record = plainCopy(recordIn(status)) as Plain;
    mutate(record);

    const error = caught(() => validateCheckpoint(record));

    expect(error.code).toBe('INVALID_CHECKPOINT');
    expect(error.details).toMatchObject(details);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', '{}'],
  ])('refuses %s with INVALID_CHECKPOINT at $', (_label, value) => {
    expect(caught(() => validateCheckpoint(value))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: '$' } });
  });

  it('reports an unknown schema version as UNSUPPORTED_SCHEMA even when everything else is broken too', () => {
    const record = { schemaVersion: 3, status: 'bogus', revision: -7, extra: true };

    expect(caught(() => validateCheckpoint(record))).toEqual({
      code: 'UNSUPPORTED_SCHEMA',
      details: { field: 'schemaVersion', actual: '3', supported: '2' },
      message: 'UNSUPPORTED_SCHEMA: schemaVersion 3 is not supported; this code reads version 2',
    });
  });

  it('does not mutate or freeze the record it validates, even a failing one', () => {
    const record = plainCopy(recordIn('completed')) as Plain;
    record.result = null;
    const snapshot = plainCopy(record);

    caught(() => validateCheckpoint(record));

    expect(record).toEqual(snapshot);
    expect(Object.isFrozen(record)).toBe(false);
  });
});
