/**
 * Adversarial (batch tools): attempts of one batch call that disagree or overlap.
 * - The items change between attempts under the same call (the tool reads its list from elsewhere):
 *   the same items in another order are delivered from the store, not applied again; items
 *   removed or added run as the new list says, none twice. (An item key reused for a different
 *   item: see batch-item-key-conflict.test.ts.)
 * - A slow attempt still applying items while a later attempt takes the call over
 * (docs/protocol.md#overlapping-attempts): every item applied once, with a provider that has only a
 * lookup and
 *   with one that deduplicates by key (items claimed 100 to a write).
 * - Tool code that catches what stopped the batch still fails the attempt; bad item keys and
 *   oversized batches are refused before any item runs.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import { Gate, Harness, Provider, UNREACHED_DEADLINE_MS, waitFor } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

interface Item {
  readonly to: string;
  readonly body: string;
}

/** What the tool reads its items from (outside the call's input, so the call's binding stays the same). */
interface Source {
  items: Item[];
  /** Recipient whose send is applied but whose answer is lost (once). */
  loseAnswerOf: string | null;
  /** Recipient whose send waits for this gate. */
  hold: { to: string; gate: Gate; reached: boolean } | null;
  /** The tool catches what `forEachItem` throws and returns ok. */
  swallow: boolean;
  /** Item keys to use instead of `to`. */
  keyOf: ((item: Item, index: number) => string) | null;
}

function newSource(items: Item[]): Source {
  return { items, loseAnswerOf: null, hold: null, swallow: false, keyOf: null };
}

const items = (n: number): Item[] => Array.from({ length: n }, (_, i) => ({ to: `u${i + 1}`, body: 'hello' }));

function batchTool(provider: Provider, source: Source, kind: 'lookup' | 'dedupe' | 'plain') {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    ...(kind === 'dedupe' ? { dedupesByKey: true, keyRetentionMs: 3_600_000 } : {}),
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const run = () =>
        ctx.forEachItem!(source.items, source.keyOf ?? ((item) => item.to), async (item, itemCtx): Promise<ToolSuccess> => {
          if (source.hold?.to === item.to) {
            source.hold.reached = true;
            await source.hold.gate.wait();
          }
          // A provider that deduplicates by key answers a repeated key with the first effect.
          if (kind === 'dedupe' && provider.effects.has(itemCtx.idempotencyKey)) return { output: { sent: item.to, deduplicated: true } };
          provider.apply(itemCtx.idempotencyKey);
          if (source.loseAnswerOf === item.to) {
            source.loseAnswerOf = null;
            throw new ToolError('unknown-outcome', `connection reset after sending to ${item.to}`);
          }
          return { output: { sent: item.to, body: item.body } };
        });
      if (!source.swallow) {
        const report = await run();
        return { output: { applied: report.applied, order: report.items.map((i) => i.key) } };
      }
      try {
        await run();
      } catch {
        // Tool code that hides the stop and claims success.
      }
      return { output: { applied: 'all, says the tool' } };
    },
    ...(kind === 'lookup'
      ? {
          async lookup(ctx: ToolContext) {
            const found = provider.find(ctx.idempotencyKey);
            return found === null ? { found: false as const } : { found: true as const, output: { sent: 'found' } };
          },
        }
      : {}),
  });
}

const maxPerKey = (p: Provider): number => Math.max(0, ...p.effects.values());

describe('the items change between attempts of one call', () => {
  test('the same items in another order: delivered from the store, nothing applied again, the report in the new order', async () => {
    const provider = new Provider();
    const source = newSource(items(6));
    source.loseAnswerOf = 'u4';
    const acts = h.activities([batchTool(provider, source, 'dedupe')]);
    const call = h.newCall();
    expect(await h.run(acts, call, 1)).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    source.items = [...source.items].reverse();
    const second = await h.run(acts, call, 2);
    expect(second).toMatchObject({ result: { outcome: { ok: true, output: { applied: 6, order: ['u6', 'u5', 'u4', 'u3', 'u2', 'u1'] } } } });
    expect(provider.effects.size).toBe(6);
    expect(maxPerKey(provider)).toBe(1);
  });

  test('items removed and added: the new list runs, removed items stay as they were, none applied twice', async () => {
    const provider = new Provider();
    const source = newSource(items(4));
    source.loseAnswerOf = 'u3';
    const acts = h.activities([batchTool(provider, source, 'dedupe')]);
    const call = h.newCall();
    expect(await h.run(acts, call, 1)).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    source.items = [
      { to: 'u1', body: 'hello' },
      { to: 'u3', body: 'hello' },
      { to: 'u9', body: 'hello' },
    ];
    expect(await h.run(acts, call, 2)).toMatchObject({ result: { outcome: { ok: true, output: { applied: 3, order: ['u1', 'u3', 'u9'] } } } });
    expect(maxPerKey(provider)).toBe(1);
    expect(provider.effects.size).toBe(4); // u1, u2, u3 (once, deduplicated on repeat) and u9
  });
});

describe('overlapping attempts of one batch call', () => {
  test.each(['lookup', 'dedupe'] as const)('provider with %s: a slow attempt holds an item while a later attempt takes the call over; every item applied once', async (kind) => {
    const provider = new Provider();
    const source = newSource(items(8));
    const gate = new Gate();
    source.hold = { to: 'u3', gate, reached: false };
    const acts = h.activities([batchTool(provider, source, kind)]);
    const call = h.newCall();
    const slow = h.run(acts, call, 1);
    await waitFor(() => source.hold!.reached);
    source.hold = null;
    // Attempt 2 while attempt 1 still applies u3 (its request is outstanding).
    const second = await h.run(acts, call, 2);
    if (kind === 'lookup') expect(second).toMatchObject({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
    gate.open();
    const first = await slow;
    // Attempt 1 lost the call (or its held item) to attempt 2: its result is discarded
    // (docs/protocol.md#crash-windows, a stale worker finishing after takeover).
    expect(first).toMatchObject({ failure: { type: expect.stringMatching(/^(FENCE_CONFLICT|RECONCILE_PENDING)$/) } });
    const third = await h.run(acts, call, 3);
    expect(third).toMatchObject({ result: { outcome: { ok: true, output: { applied: 8 } } } });
    expect(provider.effects.size).toBe(8);
    expect(maxPerKey(provider)).toBe(1);
  });
});

describe('tool code that hides the stop, bad keys, oversized batches', () => {
  test('a tool that catches what stopped the batch (an item to reconcile) and returns ok: the attempt fails all the same, the call is not completed', async () => {
    const provider = new Provider();
    const source = newSource(items(4));
    source.loseAnswerOf = 'u2';
    source.swallow = true;
    const acts = h.activities([batchTool(provider, source, 'plain')]);
    const call = h.newCall();
    expect(await h.run(acts, call, 1)).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
    expect((await h.recordOf(call))?.status).toBe('executing');
  });

  test.each([
    ['a control character', (i: Item) => `${i.to}\u0007`],
    ['257 characters', (i: Item, n: number) => (n === 2 ? 'x'.repeat(257) : i.to)],
    ['a duplicate', (i: Item, n: number) => (n === 3 ? 'u1' : i.to)],
    ['an empty key', (i: Item, n: number) => (n === 1 ? '' : i.to)],
    ['a lone surrogate', (i: Item, n: number) => (n === 1 ? '\ud800' : i.to)],
  ])('an item key with %s: refused (INVALID_ARGUMENT result), no item applied', async (_what, keyOf) => {
    const provider = new Provider();
    const source = newSource(items(4));
    source.keyOf = keyOf;
    const acts = h.activities([batchTool(provider, source, 'plain')]);
    const out = await h.run(acts, h.newCall(), 1);
    expect(out).toMatchObject({ result: { outcome: { ok: false, error: { type: 'INVALID_ARGUMENT' } } } });
    expect(provider.total()).toBe(0);
  });

  test('100,001 items and a non-JSON item are refused before any item runs', async () => {
    const provider = new Provider();
    const source = newSource(items(100_001));
    const acts = h.activities([batchTool(provider, source, 'plain')]);
    expect(await h.run(acts, h.newCall(), 1)).toMatchObject({ result: { outcome: { ok: false, error: { type: 'INVALID_ARGUMENT' } } } });
    source.items = [
      { to: 'u1', body: 'x' },
      { to: 'u2', body: Number.NaN as unknown as string },
    ];
    expect(await h.run(acts, h.newCall(), 1)).toMatchObject({ result: { outcome: { ok: false, error: { type: 'INVALID_ARGUMENT' } } } });
    expect(provider.total()).toBe(0);
  });
});
