/**
 * docs/protocol.md#call-identity: the binding's call id encodes run chain,
 * workflow id and call id injectively, and reasons from tools are made storable.
 */
import fc from 'fast-check';
import { sanitizeReason } from '../../../src/checkpoint/bounds';
import { callBindingId, parseCallBindingId } from '../../../src/checkpoint/call-identity';
import { caught } from './fixtures';

const part = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.isWellFormed() && !/[\u0000-\u001f\u007f-\u009f]/.test(s));
const identity = fc.record({ runChainId: part, workflowId: part, callId: part });

describe('callBindingId', () => {
  it('workflow "a/b" call "c" and workflow "a" call "b/c" are different calls', () => {
    expect(callBindingId({ runChainId: 'r', workflowId: 'a/b', callId: 'c' })).not.toBe(callBindingId({ runChainId: 'r', workflowId: 'a', callId: 'b/c' }));
  });

  it('is injective: two different (run chain, workflow, call) triples never share a call id, and the parts parse back', () => {
    fc.assert(
      fc.property(identity, identity, (a, b) => {
        const same = a.runChainId === b.runChainId && a.workflowId === b.workflowId && a.callId === b.callId;
        expect(callBindingId(a) === callBindingId(b)).toBe(same);
        expect(parseCallBindingId(callBindingId(a))).toEqual(a);
      }),
      { numRuns: 2_000 },
    );
  });

  it('a new run chain with the same workflow id and call id is a different call', () => {
    expect(callBindingId({ runChainId: 'run-1', workflowId: 'wf', callId: 'toolu_1' })).not.toBe(callBindingId({ runChainId: 'run-2', workflowId: 'wf', callId: 'toolu_1' }));
  });

  it('a missing part is INVALID_ARGUMENT naming it; text that is not an encoded call id parses to null', () => {
    expect(caught(() => callBindingId({ runChainId: '', workflowId: 'wf', callId: 'c' }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'runChainId' } });
    expect(parseCallBindingId('wf/toolu_1')).toBeNull();
    expect(parseCallBindingId('["other","a","b","c"]')).toBeNull();
  });
});

describe('sanitizeReason', () => {
  it('a blank message gets the fallback', () => {
    expect(sanitizeReason('   ', 'fallback')).toBe('fallback');
    expect(sanitizeReason(undefined, 'fallback')).toBe('fallback');
  });

  it('a long message is cut on a code point, well-formed, within the bound', () => {
    const cut = sanitizeReason(`${'x'.repeat(1_998)}😀😀😀`, 'fallback');
    expect(cut.length).toBeLessThanOrEqual(2_000);
    expect(cut.isWellFormed()).toBe(true);
    expect(cut.endsWith('…')).toBe(true);
  });

  it('any string becomes a storable reason: non-empty, well-formed, at most 2,000 code units', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3_000, unit: 'binary' }), (text) => {
        const reason = sanitizeReason(text, 'fallback');
        expect(reason.trim().length).toBeGreaterThan(0);
        expect(reason.isWellFormed()).toBe(true);
        expect(reason.length).toBeLessThanOrEqual(2_000);
      }),
      { numRuns: 500 },
    );
  });
});
