/**
 * Adversarial regression (docs/protocol.md#overlapping-attempts): attempt 1 frozen at every fence
 * point, then attempt 2 before the holder's settle time, attempt 3 after it, then attempt 1
 * released, then attempt 4; for a tool with lookup, one with neither lookup nor key dedupe, and one
 * whose provider deduplicates by key. Invariants: at most one effect per call (the keyed provider
 * applies a key once), a stored result never changes, a returned result is the stored one, no
 * nothing-applied code once a claim existed, no untyped error, and the call ends settled
 * (delivered, completed or uncertain), never stuck executing.
 */
import { defineTool, type ToolDefinition } from '../../src/activities';
import { FENCE_POINTS, Gate, Harness, MARGIN_MS, NOTHING_APPLIED_CODES, Provider, schema, typeOf, waitFor, type Outcome, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

type Kind = 'lookup' | 'none' | 'keyed';

function tool(kind: Kind, provider: Provider): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    ...(kind === 'keyed' ? { dedupesByKey: true, keyRetentionMs: 60_000 } : {}),
    async execute(_input, ctx) {
      if (kind === 'keyed' && provider.find(ctx.idempotencyKey) !== null) return { output: provider.find(ctx.idempotencyKey)! };
      return { output: provider.apply(ctx.idempotencyKey) };
    },
    ...(kind === 'lookup'
      ? {
          async lookup(ctx: { idempotencyKey: string }) {
            const f = provider.find(ctx.idempotencyKey);
            return f === null ? { found: false as const } : { found: true as const, output: f };
          },
        }
      : {}),
  });
}

const LABEL: Record<Kind, string> = { lookup: 'tool with lookup', none: 'tool without lookup or key dedupe', keyed: 'tool whose provider dedupes by key' };
const cases: Array<[string, string, Kind]> = [];
for (const kind of ['lookup', 'none', 'keyed'] as Kind[]) for (const p of FENCE_POINTS) cases.push([LABEL[kind], p, kind]);

describe.each(cases)('%s, attempt 1 frozen at %s', (_label, point, kind) => {
  test('attempts before and after the settle time, then the frozen one: at most one effect, the stored result never changes, results returned are the stored one, never nothing-applied after a claim, settled', async () => {
    h.offsetMs = 0;
    const provider = new Provider();
    const t = tool(kind, provider);
    const gate = new Gate();
    let frozen = false;
    const call = h.newCall();
    const first = h.run(
      h.activities([t], {
        hooks: {
          step: async (p, id) => {
            if (p === point && id.startsWith('attempt-1-')) {
              frozen = true;
              await gate.wait();
            }
          },
        },
      }),
      call,
      1,
    );
    await waitFor(() => frozen);
    const storedSeen: string[] = [];
    const snap = async () => {
      const r = await h.recordOf(call);
      if (r?.result) storedSeen.push(JSON.stringify(r.result.payload));
      return r;
    };
    await snap();
    const acts = h.activities([t]);
    const outcomes: Array<[string, Outcome]> = [];
    outcomes.push(['a2-before-settle', await h.run(acts, call, 2)]);
    await snap();
    h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50;
    outcomes.push(['a3-after-settle', await h.run(acts, call, 3)]);
    await snap();
    gate.open();
    outcomes.push(['a1', await first]);
    await snap();
    outcomes.push(['a4', await h.run(acts, call, 4)]);
    const final = await snap();

    const summary = outcomes.map(([n, o]) => `${n}=${typeOf(o)}`).join(' ');
    // effects
    expect({ summary, effects: provider.total() }).toEqual({ summary, effects: expect.any(Number) });
    expect(provider.total()).toBeLessThanOrEqual(1);
    // stored result never changes
    expect(new Set(storedSeen).size).toBeLessThanOrEqual(1);
    // results returned = stored
    for (const [, o] of outcomes) if ('result' in o) expect(JSON.stringify(o.result.outcome)).toBe(JSON.stringify(final?.result?.payload));
    // no untyped error
    for (const [n, o] of outcomes) expect([n, 'raw' in o]).toEqual([n, false]);
    // no nothing-applied code once a claim existed (point before-claim: attempt 1 has not claimed yet)
    for (const [n, o] of outcomes) if ('failure' in o) expect([n, NOTHING_APPLIED_CODES.includes(o.failure.type as never)]).toEqual([n, false]);
    // settled: final record is not stuck executing
    expect([summary, final?.status]).toEqual([summary, expect.stringMatching(/delivered|completed|uncertain/)]);
  });
});
