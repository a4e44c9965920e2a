import { createHash } from 'node:crypto';
import { checkpointKey } from '../../../src/stores/checkpoint-key';
import type { Binding } from '../../../src/checkpoint/types';

const binding: Binding = { namespace: 'tenant-a', callId: 'toolu_01', toolName: 'create_ticket', toolRevision: '1', inputFingerprint: `sha256:${'ab'.repeat(32)}` };

describe('checkpointKey', () => {
  test('is ck1- plus SHA-256 over the domain line and the RFC 8785 canonical binding (fixed vector)', () => {
    const canonical = '{"callId":"toolu_01","inputFingerprint":"sha256:' + 'ab'.repeat(32) + '","namespace":"tenant-a","toolName":"create_ticket","toolRevision":"1"}';
    const expected = `ck1-${createHash('sha256').update(`ttc/checkpoint-key/1\n${canonical}`).digest('hex')}`;

    expect(checkpointKey(binding)).toBe(expected);
    expect(checkpointKey(binding)).toBe('ck1-505cb89741a13f4cabaf2fe46207fca28d5062c64e7212898b223512d06af49e');
  });

  test('does not depend on property order, ignores extra properties, and is the same for a frozen copy', () => {
    const reordered = {
      inputFingerprint: binding.inputFingerprint,
      toolRevision: '1',
      toolName: 'create_ticket',
      callId: 'toolu_01',
      namespace: 'tenant-a',
      extra: 'ignored',
    } as Binding;

    expect(checkpointKey(reordered)).toBe(checkpointKey(binding));
    expect(checkpointKey(Object.freeze({ ...binding }))).toBe(checkpointKey(binding));
  });

  test.each(['namespace', 'callId', 'toolName', 'toolRevision'] as const)('changing %s changes the key', (field) => {
    expect(checkpointKey({ ...binding, [field]: `${binding[field]}x` })).not.toBe(checkpointKey(binding));
  });

  test('fields cannot be shifted into each other (canonical JSON, not concatenation)', () => {
    expect(checkpointKey({ ...binding, namespace: 'tenant-', callId: 'atoolu_01' })).not.toBe(checkpointKey({ ...binding, namespace: 'tenant-a', callId: 'toolu_01' }));
  });

  test('an incomplete binding is INVALID_ARGUMENT naming the field', () => {
    expect(() => checkpointKey({ ...binding, callId: '' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'callId' }) }));
    expect(() => checkpointKey({ ...binding, inputFingerprint: 'md5:x' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'inputFingerprint' }) }),
    );
  });
});
