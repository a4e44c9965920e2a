/**
 * Adversarial regression (docs/protocol.md#overlapping-attempts): attempts of
 * one call that start together, and attempts cancelled at each fence point. A lost claim
 * compare-and-swap means a live competitor (the loser fails retryably with RECONCILE_PENDING and
 * never reconciles in the same attempt); cancellation is checked right before `execute`; a
 * cancelled attempt is never reported as "nothing applied" once it may have claimed, and the next
 * attempt never applies the effect a second time.
 */
import { NOTHING_APPLIED_CODES } from '../../src/activities/contract/contract';
import { Gate, Harness, MARGIN_MS, Provider, ticketTool, waitFor, type Outcome, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const isNothingApplied = (o: Outcome): boolean => 'failure' in o && NOTHING_APPLIED_CODES.includes(o.failure.type as never);

describe('overlapping attempts starting together', () => {
  test.each([
    ['with lookup', 2],
    ['with lookup', 4],
    ['without lookup or key dedupe', 3],
    ['without lookup or key dedupe', 4],
  ])('tool %s, %i attempts at once: one effect, one result, every loser RECONCILE_PENDING (retryable)', async (kind, n) => {
    const provider = new Provider();
    provider.latencyMs = 50;
    const acts = h.activities([ticketTool(provider, { withLookup: kind === 'with lookup' })]);
    const call = h.newCall();
    const outs = await Promise.all(Array.from({ length: n as number }, (_, i) => h.run(acts, call, i + 1)));
    expect(provider.total()).toBe(1);
    expect(outs.filter((o) => 'result' in o)).toHaveLength(1);
    for (const o of outs) if (!('result' in o)) expect(o).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
  });
});

describe('cancellation', () => {
  test.each(['before-claim', 'after-claim', 'before-execute', 'after-effect', 'after-result-stored', 'after-delivery-claimed'] as const)(
    'cancelled at %s: the cancelled attempt is never reported nothing-applied; the next attempt after the settle time ends typed and applies no second effect',
    async (point) => {
      const provider = new Provider();
      const call = h.newCall();
      const gate = new Gate();
      let there = false;
      const e = h.env(call, 1);
      const p = h.run(
        h.activities([ticketTool(provider, { withLookup: true })], {
          hooks: {
            step: async (pt) => {
              if (pt === point) {
                there = true;
                await gate.wait();
              }
            },
          },
        }),
        call,
        1,
        e,
      );
      await waitFor(() => there);
      e.cancel();
      gate.open();
      const out = await p;
      expect(isNothingApplied(out)).toBe(false);
      h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50;
      const next = await h.run(h.activities([ticketTool(provider, { withLookup: true })]), call, 2);
      expect(provider.total()).toBeLessThanOrEqual(1);
      expect('raw' in next).toBe(false);
    },
  );
});
