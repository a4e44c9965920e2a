// The run input's compensation policy (`compensateOn`) is refused with a typed error
// naming the field, and the run's effects are listed in exactly one group per call.
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { listEffects } from '../../../src/workflows/agent/effects';
import { summarizeCalls } from '../../../src/workflows/agent/run-state';
import { validateAgentWorkflowInput } from '../../../src/workflows/agent/input';
import type { AgentWorkflowInput, CallReport, FinalCallStatus } from '../../../src/workflows/agent/types';

const base: AgentWorkflowInput = { tenant: 'acme', model: 'scripted', prompt: 'hi', tools: ['reserve'], budget: { maxTurns: 1, maxToolCalls: 1, deadlineMs: 1_000 } };

function refusal(compensateOn: unknown): ApplicationFailure {
  try {
    validateAgentWorkflowInput({ ...base, compensateOn: compensateOn as string[] });
  } catch (error) {
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }
  throw new Error('accepted');
}

describe('agentWorkflow input: compensateOn', () => {
  it('accepts distinct error types, and [] (compensate on cancel and abandon only)', () => {
    expect(() => validateAgentWorkflowInput({ ...base, compensateOn: ['BUSINESS_REJECTION', 'OUT_OF_STOCK'] })).not.toThrow();
    expect(() => validateAgentWorkflowInput({ ...base, compensateOn: [] })).not.toThrow();
  });

  it.each([
    ['not an array', 'BUSINESS_REJECTION', 'compensateOn'],
    ['an empty type', ['BUSINESS_REJECTION', ''], 'compensateOn[1]'],
    ['a type that is not a string', [42], 'compensateOn[0]'],
    ['a type over 256 characters', ['x'.repeat(257)], 'compensateOn[0]'],
    ['a repeated type', ['A', 'B', 'A'], 'compensateOn[2]'],
    ['more than 100 types', Array.from({ length: 101 }, (_, i) => `T${i}`), 'compensateOn'],
  ])('refuses %s with INVALID_ARGUMENT naming the field', (_what, compensateOn, field) => {
    const error = refusal(compensateOn);
    expect([error.type, error.nonRetryable, error.details]).toEqual(['INVALID_ARGUMENT', true, [{ field }]]);
    expect(error.message).toMatch(new RegExp(`^INVALID_ARGUMENT: agentWorkflow input ${field.replace(/[[\]]/g, '\\$&')} `));
  });
});

describe('listEffects', () => {
  const report = (callId: string, status: FinalCallStatus, extra: Partial<CallReport<FinalCallStatus>> = {}): CallReport<FinalCallStatus> => ({
    callId,
    modelCallId: callId,
    toolName: 't',
    turn: 0,
    status,
    source: null,
    receipt: null,
    outcome: null,
    toolRevision: null,
    intentDigest: null,
    idempotencyKey: null,
    errorType: null,
    reason: null,
    ...extra,
  });
  const ok = { outcome: { ok: true, output: null, receipt: null } } as const;
  const compensation = (status: 'compensated' | 'pending' | 'not-declared') => ({
    compensation: { status, generation: 1, toolName: null, toolRevision: null, source: null, outcome: null, idempotencyKey: null, errorType: null, reason: null },
  });

  it('puts each call in exactly one group: applied, compensated, compensation pending, not run, unknown', () => {
    const calls = [
      report('a', 'completed', ok),
      report('b', 'resolved-applied', { ...ok, ...compensation('compensated') }),
      report('c', 'completed', { ...ok, ...compensation('pending') }),
      report('d', 'completed', { ...ok, ...compensation('not-declared') }),
      report('e', 'completed', { outcome: { ok: false, error: { type: 'BUSINESS_REJECTION', message: 'no' } } }),
      report('f', 'resolved-absent'),
      report('g', 'not-run'),
      report('h', 'unknown'),
      report('i', 'abandoned'),
    ];
    expect(listEffects(calls)).toEqual({ applied: ['a', 'd'], compensated: ['b'], compensationPending: ['c'], notRun: ['e', 'f', 'g'], unknown: ['h', 'i'] });
  });

  it('property: a batch call cancelled part-way is grouped by its items, in effects and summary alike; every call in exactly one group', () => {
    const counts = fc.record({ applied: fc.nat(50), notApplied: fc.nat(50), unknown: fc.nat(3) });
    const part = (count: number) => ({ count, keys: Array.from({ length: Math.min(count, 3) }, (_, i) => `k${i}`) });
    const batchCall = counts.map(({ applied, notApplied, unknown }) => ({
      applied,
      unknown,
      report: { total: applied + notApplied + unknown, applied: part(applied), notApplied: part(notApplied), unknown: part(unknown), truncated: false },
    }));
    fc.assert(
      fc.property(fc.array(fc.option(batchCall, { nil: null }), { minLength: 1, maxLength: 8 }), (batches) => {
        const calls = batches.map((b, i) => (b === null ? report(`u${i}`, 'unknown') : report(`b${i}`, 'unknown', { batch: b.report })));
        const effects = listEffects(calls);
        const summary = summarizeCalls(calls);
        const groups = [...effects.applied, ...effects.compensated, ...effects.compensationPending, ...effects.notRun, ...effects.unknown];
        expect(groups.sort()).toEqual(calls.map((c) => c.callId).sort());
        batches.forEach((b, i) => {
          const id = b === null ? `u${i}` : `b${i}`;
          const expected = b === null || b.unknown > 0 ? 'unknown' : b.applied > 0 ? 'applied' : 'notRun';
          expect(effects[expected]).toContain(id);
          expect(summary[expected === 'applied' ? 'ran' : expected]).toContain(id);
        });
      }),
    );
  });
});
