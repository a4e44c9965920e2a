/**
 * Adversarial regression (docs/protocol.md#nothing-applied): the store throws the real
 * STORE_UNAVAILABLE from the k-th store operation of attempt 1 on, stays down for attempts 2-5, and
 * comes back (after the settle time) for attempts 6-7. Invariants: once a claim (the claiming
 * insert, or a claim compare-and-swap) may have been sent, no attempt is reported as nothing
 * applied (a store that is down after a claim ends in RECONCILE_PENDING or a pause); at most one
 * effect; a returned result is the stored one; no untyped error.
 */
import { defineTool, type ToolDefinition } from '../../src/activities';
import { FlakyStore, Harness, MARGIN_MS, NOTHING_APPLIED_CODES, Provider, schema, typeOf, type Outcome, UNREACHED_DEADLINE_MS } from './harness';

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
const cases: Array<[string, number, Kind]> = [];
for (const kind of ['lookup', 'none', 'keyed'] as Kind[]) for (let k = 1; k <= 7; k += 1) cases.push([LABEL[kind], k, kind]);

describe.each(cases)('%s, store down from operation %i of attempt 1 through attempt 5', (_label, k, kind) => {
  test('never nothing-applied once a claim may have been sent, at most one effect, results returned are the stored one', async () => {
    h.offsetMs = 0;
    const provider = new Provider();
    const flaky = new FlakyStore(h.store);
    let n = 0;
    flaky.failWhen = () => {
      n += 1;
      return n >= k;
    };
    const acts = h.activities([tool(kind, provider)], { store: flaky });
    const call = h.newCall();
    const outcomes: Array<[number, Outcome]> = [];
    for (let attempt = 1; attempt <= 5; attempt += 1) outcomes.push([attempt, await h.run(acts, call, attempt)]);
    const opsDone = [...flaky.ops];
    flaky.failWhen = null;
    h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50;
    for (let attempt = 6; attempt <= 7; attempt += 1) outcomes.push([attempt, await h.run(acts, call, attempt)]);
    const final = await h.recordOf(call);
    const summary = `${outcomes.map(([a, o]) => `${a}=${typeOf(o)}`).join(' ')} ops=${opsDone.slice(0, k + 1).join(',')}`;
    if (process.env.TTC_ADVERSARIAL_VERBOSE) console.log(kind, k, summary);
    // A claim may have been sent: a claiming insert (docs/protocol.md#cost) that succeeded, or any
    // claim compare-and-swap (the fence treats a failed one as maybe sent). A failed insert wrote
    // nothing (STORE_UNAVAILABLE, the store's contract).
    const claimed = opsDone.slice(0, k).includes('cas:executing') || opsDone.slice(0, k - 1).includes('createIfAbsent');

    expect([summary, provider.total()]).toEqual([summary, expect.any(Number)]);
    expect(provider.total()).toBeLessThanOrEqual(1);
    for (const [a, o] of outcomes) expect([a, 'raw' in o]).toEqual([a, false]);
    if (claimed || final?.status !== 'ready') {
      // once a claim CAS may have been sent, the call is never reported as nothing applied
      for (const [a, o] of outcomes)
        if ('failure' in o && (claimed || a > 1)) expect([summary, a, NOTHING_APPLIED_CODES.includes(o.failure.type as never)]).toEqual([summary, a, false]);
    }
    for (const [, o] of outcomes) if ('result' in o) expect(JSON.stringify(o.result.outcome)).toBe(JSON.stringify(final?.result?.payload));
  });
});

describe('the store is down at the claiming insert of attempt 1 (docs/protocol.md#cost: the claim of a fresh call is its insert)', () => {
  test('STORE_UNAVAILABLE wrote nothing, so attempt 1 fails with it (nothing applied, not RECONCILE_PENDING); with the store back, attempt 2 runs the tool once', async () => {
    h.offsetMs = 0;
    const provider = new Provider();
    const flaky = new FlakyStore(h.store);
    flaky.failWhen = (op) => op === 'createIfAbsent';
    const acts = h.activities([tool('none', provider)], { store: flaky });
    const call = h.newCall();

    const first = await h.run(acts, call, 1);
    expect(first).toEqual({ failure: expect.objectContaining({ type: 'STORE_UNAVAILABLE' }) });
    expect(await h.recordOf(call)).toBeNull();

    flaky.failWhen = null;
    expect(typeOf(await h.run(acts, call, 2))).toBe('result:executed');
    expect(provider.total()).toBe(1);
  });
});
