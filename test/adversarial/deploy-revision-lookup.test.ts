/**
 * A claim left unfinished by an earlier revision of a tool (its attempt applied the effect and
 * its worker died), met by an attempt of the next revision (docs/protocol.md#nothing-applied, the
 * settle-time rules of a reconciliation). With `lookupFindsEarlierRevisions` the
 * new revision's lookup is asked, with the key the earlier attempt sent, only once the claim's
 * settle time has passed; a find settles the call with it, nothing else does, and the effect is
 * never applied twice. Without the declaration the lookup is never asked. Explored over the
 * attempt's time relative to the settle time (a fixed, injected clock) and every lookup answer.
 */
import fc from 'fast-check';
import { defineTool } from '../../src/activities';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { CheckpointError } from '../../src/checkpoint/errors';
import { Harness, MARGIN_MS, never, Provider, ticketTool, waitFor, type Outcome } from './harness';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

type Answer = 'found' | 'not-found' | 'throws' | 'malformed';

/** Attempt 1 under revision v1 applies the effect and its worker dies (it never returns); the claim as it was left. */
async function v1DiedAfterEffect(provider: Provider): Promise<{ call: ReturnType<Harness['newCall']>; record: CheckpointRecord }> {
  const call = h.newCall();
  void h.run(h.activities([ticketTool(provider)], { hooks: { step: (p) => (p === 'after-effect' ? never() : undefined) } }), call, 1);
  await waitFor(() => provider.total() === 1);
  let record: CheckpointRecord | undefined;
  await waitFor(async () => {
    record = (await h.recordsOfWorkflow(call)).find((r) => r.status === 'executing');
    return record !== undefined;
  });
  return { call, record: record! };
}

/** Revision v2 of the tool, whose lookup answers `answer` and records the keys it is asked for. */
function v2(provider: Provider, answer: Answer, declared: boolean, asked: string[]) {
  return defineTool({
    ...ticketTool(provider),
    revision: 'v2',
    lookupFindsEarlierRevisions: declared,
    async lookup(ctx) {
      asked.push(ctx.idempotencyKey);
      if (answer === 'throws') throw new Error('provider lookup timed out');
      if (answer === 'malformed') return { found: 'maybe' } as never;
      const found = answer === 'found' ? provider.find(ctx.idempotencyKey) : null;
      return found === null ? { found: false as const } : { found: true as const, output: found, receipt: { via: 'lookup' } };
    },
  });
}

function failureType(outcome: Outcome): string {
  if ('failure' in outcome) return `${outcome.failure.type}${outcome.failure.nonRetryable ? '' : ' (retryable)'}`;
  if ('result' in outcome) return `result:${outcome.result.source}`;
  return `raw:${String(outcome.raw)}`;
}

describe('a claim left by an earlier revision, met by the next revision', () => {
  test('is reconciled by the new lookup only when declared, only after the settle time, only by a find; the effect is never applied twice', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -1_500, max: 1_500 }),
        fc.constantFrom<Answer>('found', 'not-found', 'throws', 'malformed'),
        fc.boolean(),
        async (fromSettleMs, answer, declared) => {
          const provider = new Provider();
          const { call, record } = await v1DiedAfterEffect(provider);
          const v1Key = provider.requests[0]!;
          const settleAt = Date.parse(record.execution!.deadlineAt!) + MARGIN_MS;
          const now = new Date(settleAt + fromSettleMs);
          const asked: string[] = [];
          const outcome = await h.run(h.activities([v2(provider, answer, declared, asked)], { clock: () => now }), call, 2);
          const after = await h.recordOf(call);

          expect(provider.total()).toBe(1);
          if (!declared || fromSettleMs < 0) {
            // Not declared, or the holder's request may still be outstanding: no lookup, nothing written.
            expect(asked).toEqual([]);
            expect(failureType(outcome)).toBe(fromSettleMs < 0 ? 'RECONCILE_PENDING (retryable)' : 'OUTCOME_UNKNOWN');
            expect(after?.status).toBe('executing');
            expect(after?.revision).toBe(record.revision);
            return;
          }
          // After the settle time: asked once, with the key the v1 attempt sent.
          expect(asked).toEqual([v1Key]);
          if (answer === 'found') {
            expect(outcome).toEqual({
              result: expect.objectContaining({
                source: 'lookup',
                toolRevision: 'v1',
                idempotencyKey: v1Key,
                storedUnder: { toolName: 'create_ticket', toolRevision: 'v1' },
                outcome: { ok: true, output: provider.find(v1Key), receipt: { via: 'lookup' } },
              }),
            });
            expect(after?.status).toBe('delivered');
            expect(after?.binding.toolRevision).toBe('v1');
            return;
          }
          expect(failureType(outcome)).toBe(answer === 'not-found' ? 'OUTCOME_UNKNOWN' : 'RECONCILE_PENDING (retryable)');
          expect(after?.status).toBe('executing');
          expect(after?.revision).toBe(record.revision);
        },
      ),
      { numRuns: 30 },
    );
  });

  test('the declaration needs a lookup and is not for batch tools', () => {
    const provider = new Provider();
    expect(() => defineTool({ ...ticketTool(provider), lookup: undefined, lookupFindsEarlierRevisions: true })).toThrow(CheckpointError);
    expect(() => defineTool({ ...ticketTool(provider, { withLookup: true }), batch: true, lookupFindsEarlierRevisions: true })).toThrow(
      /lookupFindsEarlierRevisions cannot be combined with batch/,
    );
    expect(() => defineTool({ ...ticketTool(provider, { withLookup: true }), lookupFindsEarlierRevisions: 'yes' as never })).toThrow(
      /lookupFindsEarlierRevisions must be a boolean/,
    );
  });
});
