/**
 * A `dedupeByIntent` tool applies one action once per run, however the model phrased it
 * (docs/protocol.md#dedupe-keys): calls whose validated arguments are the same intent share one
 * checkpoint, also when the model's raw input differs by a field the schema strips or a default it
 * fills, and also when the calls run at the same time. Activities in MockActivityEnvironment
 * against a SQLite file store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { JsonValue } from '../../src/checkpoint/types';

jest.setTimeout(120_000);

/** Effects per idempotency key; while `held` is set, a request waits for it (in flight). */
class Provider {
  readonly effects = new Map<string, number>();
  held: Promise<void> | null = null;

  async apply(key: string, title: string): Promise<{ ticket: string }> {
    if (this.held !== null) await this.held;
    this.effects.set(key, (this.effects.get(key) ?? 0) + 1);
    return { ticket: `T-${title}` };
  }

  total(): number {
    return [...this.effects.values()].reduce((a, b) => a + b, 0);
  }
}

/** Strips fields it does not know (zod's default) and fills `priority`. */
const schema = z.object({ title: z.string().min(1), priority: z.enum(['low', 'normal', 'high']).default('normal') });

function ticketTool(provider: Provider, dedupeByIntent = true) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    dedupeByIntent,
    callDeadlineMs: 500,
    async execute(input, ctx) {
      return { output: await provider.apply(ctx.idempotencyKey, input.title) };
    },
  });
}

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; nonRetryable: boolean } };

describe('dedupeByIntent keys calls by what runs', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-intent-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function activities(provider: Provider, dedupeByIntent = true): ToolActivities {
    return createToolActivities({ store, tools: [ticketTool(provider, dedupeByIntent)], reconcileMarginMs: 100 });
  }

  /** A run: its workflow id and run chain. */
  function newRun(): { workflowId: string; runId: string } {
    seq += 1;
    return { workflowId: `wf-intent-${seq}`, runId: `run-${seq}` };
  }

  function call(run: { runId: string }, callId: string, input: JsonValue, over: Partial<FencedToolInput> = {}): FencedToolInput {
    return { tenant: 'acme', callId, toolName: 'create_ticket', input, runChainId: run.runId, ...over };
  }

  async function attempt(acts: ToolActivities, run: { workflowId: string; runId: string }, input: FencedToolInput, n = 1): Promise<Outcome> {
    const env = new MockActivityEnvironment({ attempt: n, workflowExecution: { workflowId: run.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    try {
      return { result: await env.run(acts.runFencedTool, input) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, nonRetryable: error.nonRetryable ?? false } };
    }
  }

  test.each([
    ['a field the schema strips', { title: 'printer', note: 'asked again' }],
    ['a default the schema fills', { title: 'printer', priority: 'normal' }],
    ['the default, given first', { priority: 'normal', title: 'printer' }],
  ])('a re-planned call whose model input differs by %s is answered from the first call: one effect', async (_what, again) => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();

    const first = await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    const second = await attempt(acts, run, call(run, 'toolu_2', again));

    expect(first).toEqual({ result: expect.objectContaining({ source: 'executed', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }) });
    expect(second).toEqual({
      result: expect.objectContaining({ callId: 'toolu_2', source: 'store', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }),
    });
    const [a, b] = [first, second].map((o) => (o as { result: FencedToolResult }).result);
    expect(b!.idempotencyKey).toBe(a!.idempotencyKey);
    expect(b!.intentDigest).toBe(a!.intentDigest);
    expect(provider.total()).toBe(1);
  });

  test("two calls with one intent started together: one effect; the later one waits for the first and its retry delivers the first call's result", async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    let release!: () => void;
    provider.held = new Promise<void>((resolve) => (release = resolve));

    const first = attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    while (provider.effects.size === 0 && !(await store.listByStatus(['executing'], { limit: 10_000 })).some((r) => r.binding.callId.includes(run.workflowId))) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const second = await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }));
    release();

    expect(second).toEqual({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
    expect(await first).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
    expect(await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }), 2)).toEqual({
      result: expect.objectContaining({ callId: 'toolu_2', source: 'store', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }),
    });
    expect(provider.total()).toBe(1);
  });

  test('different validated arguments are two actions, and so are the same arguments in another run chain', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    const other = newRun();

    const results = [
      await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' })),
      await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'high' })),
      await attempt(acts, other, call(other, 'toolu_1', { title: 'printer' })),
    ];

    expect(results.map((o) => (o as { result: FencedToolResult }).result.source)).toEqual(['executed', 'executed', 'executed']);
    expect(provider.total()).toBe(3);
  });

  test('a tool without dedupeByIntent runs each call, whatever its intent', async () => {
    const provider = new Provider();
    const acts = activities(provider, false);
    const run = newRun();

    await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', note: 'again' }));

    expect(provider.total()).toBe(2);
  });

  test("a rerun's generation is its own intent: a later call in that generation adopts the rerun, never the proven-absent call", async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    const first = (await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }))) as { result: FencedToolResult };
    const digest = first.result.intentDigest!;

    const rerun = await attempt(acts, run, call(run, 'toolu_1~retry1', { title: 'printer' }, { intentGeneration: 1 }));
    const later = await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', note: 'x' }, { intentGenerations: { [digest]: 1 } }));

    expect(rerun).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
    expect(later).toEqual({ result: expect.objectContaining({ source: 'store', idempotencyKey: (rerun as { result: FencedToolResult }).result.idempotencyKey }) });
    expect(provider.total()).toBe(2);
  });

  test('property: calls of one run that mean the same action, phrased any way and interleaved any way, apply it once', async () => {
    const title = fc.constantFrom('printer', 'laptop');
    const phrasing = fc.record(
      { title, priority: fc.constantFrom(undefined, 'normal', 'high'), note: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }), order: fc.boolean() },
      { requiredKeys: ['title', 'order'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(phrasing, { minLength: 2, maxLength: 5 }), fc.scheduler(), async (phrasings, s) => {
        const provider = new Provider();
        const scheduled: CheckpointStore = new Proxy(store, {
          get(target, prop, receiver) {
            const value = Reflect.get(target, prop, receiver) as unknown;
            if (typeof value !== 'function' || prop === 'close') return value;
            return (...args: unknown[]) => s.schedule(Promise.resolve(), String(prop)).then(() => (value as (...a: unknown[]) => unknown).apply(target, args));
          },
        });
        const acts = createToolActivities({ store: scheduled, tools: [ticketTool(provider)], reconcileMarginMs: 100 });
        const run = newRun();
        const inputs = phrasings.map((p, i) => {
          const fields: Record<string, JsonValue> = { title: p.title };
          if (p.priority !== undefined) fields.priority = p.priority;
          if (p.note !== undefined) fields.note = p.note;
          const ordered = p.order ? fields : Object.fromEntries(Object.entries(fields).reverse());
          return call(run, `toolu_${i}`, ordered);
        });
        const outcomes = await s.waitFor(Promise.all(inputs.map((input) => attempt(acts, run, input))));
        // Calls that waited for a holder run again once every first attempt settled, as Temporal retries them.
        for (const [i, outcome] of outcomes.entries()) {
          let current = outcome;
          for (let n = 2; 'failure' in current && n <= 3; n += 1) {
            current = await s.waitFor(attempt(acts, run, inputs[i]!, n));
          }
          outcomes[i] = current;
        }

        const intents = new Set(phrasings.map((p) => `${p.title}/${p.priority ?? 'normal'}`));
        expect(outcomes.every((o) => 'result' in o)).toBe(true);
        expect(provider.total()).toBe(intents.size);
        const byIntent = new Map<string, string>();
        outcomes.forEach((o, i) => {
          const p = phrasings[i]!;
          const key = (o as { result: FencedToolResult }).result.idempotencyKey;
          const intent = `${p.title}/${p.priority ?? 'normal'}`;
          expect(byIntent.get(intent) ?? key).toBe(key);
          byIntent.set(intent, key);
        });
      }),
      { numRuns: 40 },
    );
  });
});
