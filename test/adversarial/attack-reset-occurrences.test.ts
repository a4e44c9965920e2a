/**
 * Adversarial (resets, fence level): occurrence walking, adoption records and their crash
 * windows, model-chosen call ids that parse as another run's, concurrency, three-level branches.
 * The fence's activities in MockActivityEnvironment against a SQLite file store, as
 * test/integration/reset-occurrences.test.ts drives them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { ADOPTED_REVISION } from '../../src/activities/fence/intent-dedupe';
import { occurrenceScopeOf, packCallHashes, runOfCallId, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(120_000);

describe('attack: reset occurrences at the fence', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  /** Activities whose store fails the next write of an adoption record (a crash between the occurrence-adoption record and it). */
  let crashy: ToolActivities;
  let failAdoptionWrites = 0;
  let applied: string[];
  let seq = 0;

  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    callDeadlineMs: 500,
    async execute(input) {
      applied.push(input.orderId);
      return { output: { charge: `ch-${input.orderId}-${applied.length}` } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-reset-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({ store, tools: [charge], reconcileMarginMs: 100 });
    const wrapped = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'createIfAbsent') {
          return async (record: Parameters<CheckpointStore['createIfAbsent']>[0], options?: Parameters<CheckpointStore['createIfAbsent']>[1]) => {
            if (record.binding.toolRevision === ADOPTED_REVISION && failAdoptionWrites > 0) {
              failAdoptionWrites -= 1;
              throw new Error('worker crashed before the adoption record was written');
            }
            return target.createIfAbsent(record, options);
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    crashy = createToolActivities({ store: wrapped, tools: [charge], reconcileMarginMs: 100 });
  });
  beforeEach(() => {
    applied = [];
    failAdoptionWrites = 0;
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function chain(): { workflowId: string; chain: string; scope: string } {
    seq += 1;
    const id = randomUUID();
    return { workflowId: `wf-attack-${seq}`, chain: id, scope: occurrenceScopeOf({ firstExecutionRunId: id }) };
  }

  /** What the agent sends: `liveCalls`/`liveRuns` from the history's calls of other runs. */
  function occurrences(at: { chain: string; scope: string }, runId: string, history: string[]): FencedToolInput['occurrences'] {
    const others = history.filter((c) => runOfCallId(c, at.chain) !== runId);
    return others.length === 0 ? { scope: at.scope } : { scope: at.scope, liveCalls: packCallHashes(others), liveRuns: [...new Set(others.map((c) => runOfCallId(c, at.chain)))] };
  }

  async function run(
    at: { workflowId: string; chain: string },
    activityRunId: string,
    callId: string,
    occ: FencedToolInput['occurrences'],
    options: { attempt?: number; activities?: ToolActivities; orderId?: string } = {},
  ): Promise<FencedToolResult | Error> {
    const env = new MockActivityEnvironment({
      attempt: options.attempt ?? 1,
      workflowExecution: { workflowId: at.workflowId, runId: activityRunId },
      heartbeatTimeoutMs: 30_000,
    } as never);
    try {
      return await env.run((options.activities ?? acts).runFencedTool, {
        tenant: 'acme',
        callId,
        runChainId: at.chain,
        toolName: 'charge',
        input: { orderId: options.orderId ?? 'o-1' },
        occurrences: occ,
      } as FencedToolInput);
    } catch (error) {
      return error as Error;
    }
  }

  const ok = (r: FencedToolResult | Error): FencedToolResult => {
    if (r instanceof Error) throw r;
    return r;
  };

  // ---------------------------------------------------------------------------------------------
  // 1. A model id that parses as another run's, in the chain's first run (which keeps model ids).
  // ---------------------------------------------------------------------------------------------
  it("first run: a model id `b@<uuid>` is not a discarded branch's call: it must not be answered by the same run's earlier live call", async () => {
    const at = chain();
    const history: string[] = [];
    // Turn 1: toolu_a charges o-1.
    history.push('toolu_a');
    const a = ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, history)));
    expect(a.source).toBe('executed');
    // Turn 2: the model asks to charge o-1 again, under an id that ends in @<uuid>; the first run addresses it as the workflow does.
    const forged = runScopedCallId(`toolu_b@${randomUUID()}`, at.chain, at.chain);
    history.push(forged);
    const b = ok(await run(at, at.chain, forged, occurrences(at, at.chain, history)));
    // The run asked twice: two charges (b is a call of the first run, never a discarded branch's).
    expect({ source: b.source, appliedByRun: b.appliedByRun, applied: applied.length }).toEqual({ source: 'executed', appliedByRun: undefined, applied: 2 });
  });

  it('first run: the same with a `/` after the uuid (`b@<uuid>/x`)', async () => {
    const at = chain();
    const history: string[] = ['toolu_a'];
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, history)));
    const forged = runScopedCallId(`toolu_b@${randomUUID()}/x`, at.chain, at.chain);
    history.push(forged);
    const b = ok(await run(at, at.chain, forged, occurrences(at, at.chain, history)));
    expect({ source: b.source, applied: applied.length }).toEqual({ source: 'executed', applied: 2 });
  });

  it('reset run: a model id ending in another run id is scoped to the reset run (no effect on the walk)', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    // The reset run's model read the note naming the first run: it reuses `x@<chain>` as its id.
    const id = runScopedCallId(`toolu_x@${at.chain}`, r2, at.chain);
    expect(runOfCallId(id, at.chain)).toBe(r2);
    const again = ok(await run(at, r2, id, occurrences(at, r2, [id])));
    expect(again.source).toBe('store');
    expect(applied).toHaveLength(1);
  });

  // ---------------------------------------------------------------------------------------------
  // 2. Crash between the occurrence-adoption record and the adoption record.
  // ---------------------------------------------------------------------------------------------
  it('crash between the two records, retried in the same run: the retry adopts (no second effect)', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    const c1 = runScopedCallId('toolu_c', r2, at.chain);
    failAdoptionWrites = 1;
    const crashed = await run(at, r2, c1, occurrences(at, r2, [c1]), { activities: crashy });
    expect(crashed).toBeInstanceOf(Error);
    const retried = ok(await run(at, r2, c1, occurrences(at, r2, [c1]), { attempt: 2 }));
    expect({ source: retried.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it('crash between the two records, then the run is reset with the call in flight: the call re-dispatched in the reset run adopts (no second effect)', async () => {
    const at = chain();
    // R1 (first run) charged o-1 once.
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    // R2: a reset of R1 to before that turn. Its call c1 starts adopting toolu_a: the occurrence-adoption record (0, R2) is written, then the worker dies.
    const r2 = randomUUID();
    const c1 = runScopedCallId('toolu_c', r2, at.chain);
    failAdoptionWrites = 1;
    expect(await run(at, r2, c1, occurrences(at, r2, [c1]), { activities: crashy })).toBeInstanceOf(Error);
    // R3: a reset of R2 to a point after c1 was scheduled (c1 in flight, in R3's history as a call of R2). Temporal dispatches c1 again, attempt 1 in R3.
    const r3 = randomUUID();
    const inFlight = await run(at, r3, c1, occurrences(at, r3, [c1]));
    // R3's branch asked for o-1 once (c1). (Found: c1's own occurrence-adoption record makes occurrence 0 "taken in branch", c1 claims 1 and charges again.)
    expect({ source: ok(inFlight).source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it('control: c1 fully adopted in R2 and re-dispatched in R3 finds its own adoption record', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    const c1 = runScopedCallId('toolu_c', r2, at.chain);
    expect(ok(await run(at, r2, c1, occurrences(at, r2, [c1]))).source).toBe('store');
    const r3 = randomUUID();
    const again = ok(await run(at, r3, c1, occurrences(at, r3, [c1])));
    expect({ source: again.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  // ---------------------------------------------------------------------------------------------
  // 3. Races to adopt within one run, and three levels of branches.
  // ---------------------------------------------------------------------------------------------
  it('four calls of one reset run race for two discarded occurrences: two adopt (one each), two run', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_1', occurrences(at, at.chain, ['toolu_1'])));
    ok(await run(at, at.chain, 'toolu_2', occurrences(at, at.chain, ['toolu_1', 'toolu_2'])));
    const r2 = randomUUID();
    const ids = [1, 2, 3, 4].map((n) => runScopedCallId(`toolu_r${n}`, r2, at.chain));
    const results = (await Promise.all(ids.map((id) => run(at, r2, id, occurrences(at, r2, ids))))).map(ok);
    const adopted = results.filter((r) => r.source === 'store').map((r) => r.appliedByRun?.callId);
    expect(adopted.sort()).toEqual(['toolu_1', 'toolu_2']);
    expect(applied).toHaveLength(4);
    expect(new Set(results.map((r) => r.idempotencyKey)).size).toBe(4);
  });

  it('three levels: R1 charges twice, R2 (reset to 0) adopts both and charges a third, R3 (reset of R2 after its first call) asks twice more concurrently', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_1', occurrences(at, at.chain, ['toolu_1'])));
    ok(await run(at, at.chain, 'toolu_2', occurrences(at, at.chain, ['toolu_1', 'toolu_2'])));
    const r2 = randomUUID();
    const h2: string[] = [];
    for (const n of [1, 2, 3]) {
      const id = runScopedCallId(`toolu_c${n}`, r2, at.chain);
      h2.push(id);
      ok(await run(at, r2, id, occurrences(at, r2, h2)));
    }
    expect(applied).toHaveLength(3);
    const r3 = randomUUID();
    const h3 = [h2[0]!];
    const ds = [1, 2].map((n) => runScopedCallId(`toolu_d${n}`, r3, at.chain));
    h3.push(...ds);
    const results = (await Promise.all(ds.map((id) => run(at, r3, id, occurrences(at, r3, h3))))).map(ok);
    // R3's branch asks three times (c1 replayed, d1, d2): still three effects, d1/d2 adopt toolu_2 (via c2, discarded) and c3.
    expect(applied).toHaveLength(3);
    expect(results.map((r) => r.appliedByRun?.callId).sort()).toEqual([h2[2], 'toolu_2'].sort());
    // R4: a reset of R3 after d1/d2, concurrent with nothing: one more call runs.
    const r4 = randomUUID();
    const e = runScopedCallId('toolu_e', r4, at.chain);
    const h4 = [...h3, e];
    expect(ok(await run(at, r4, e, occurrences(at, r4, h4))).source).toBe('executed');
    expect(applied).toHaveLength(4);
  });

  // ---------------------------------------------------------------------------------------------
  // 4. Holders that are not settled; forged inputs.
  // ---------------------------------------------------------------------------------------------
  it('a discarded holder still executing (its worker died after the effect) is reconciled, never run again by the adopter', async () => {
    const at = chain();
    const dying = createToolActivities({
      store,
      tools: [charge],
      reconcileMarginMs: 100,
      hooks: {
        step(point) {
          if (point === 'after-effect') throw new Error('SIGKILL after the effect');
        },
      },
    });
    expect(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a']), { activities: dying })).toBeInstanceOf(Error);
    expect(applied).toHaveLength(1);
    const r2 = randomUUID();
    const c = runScopedCallId('toolu_c', r2, at.chain);
    const early = await run(at, r2, c, occurrences(at, r2, [c]));
    expect(early).toBeInstanceOf(Error);
    expect(String(early)).toMatch(/RECONCILE_PENDING|OUTCOME_UNKNOWN|may be outstanding|claimed/);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const later = await run(at, r2, c, occurrences(at, r2, [c]), { attempt: 2 });
    expect(later).toBeInstanceOf(Error);
    expect(String(later)).toMatch(/OUTCOME_UNKNOWN|did not finish/);
    expect(applied).toHaveLength(1);
  });

  it('liveRuns naming the current run and liveCalls naming the call itself change nothing', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    const c1 = runScopedCallId('toolu_c1', r2, at.chain);
    ok(await run(at, r2, c1, occurrences(at, r2, [c1])));
    const c2 = runScopedCallId('toolu_c2', r2, at.chain);
    const forged = ok(await run(at, r2, c2, { scope: at.scope, liveCalls: packCallHashes([c1, c2]), liveRuns: [r2] }));
    // c1 (R2, adopted toolu_a) is R2's own: occurrence 0 is taken; c2 claims occurrence 1 and runs.
    expect(forged.source).toBe('executed');
    expect(applied).toHaveLength(2);
  });

  it('liveCalls without liveRuns: a history call that adopted is not found, the occurrence it adopted is adopted again? (R3 after R2 adopted)', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    const c1 = runScopedCallId('toolu_c1', r2, at.chain);
    ok(await run(at, r2, c1, occurrences(at, r2, [c1])));
    const r3 = randomUUID();
    const d = runScopedCallId('toolu_d', r3, at.chain);
    // As the agent sends it (liveRuns [R2]): d runs (R3 asked twice: c1 replayed, d).
    const proper = ok(await run(at, r3, d, occurrences(at, r3, [c1, d])));
    expect(proper.source).toBe('executed');
    expect(applied).toHaveLength(2);
  });

  it('`from` past every holder: the call runs at a fresh occurrence (workflow code trusted, documented)', async () => {
    const at = chain();
    ok(await run(at, at.chain, 'toolu_a', occurrences(at, at.chain, ['toolu_a'])));
    const r2 = randomUUID();
    const c = runScopedCallId('toolu_c', r2, at.chain);
    const far = ok(await run(at, r2, c, { scope: at.scope, from: 1_000_000 }));
    expect(far.source).toBe('executed');
  });
});
