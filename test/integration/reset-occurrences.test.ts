/**
 * Occurrences of an intent across the branches of a run chain (docs/protocol.md#resets): a call
 * of a reset run claims the first occurrence of its intent that no call of its own history holds;
 * one a discarded branch holds answers it from its checkpoint. So however often a run is reset, and
 * wherever, each action is applied at most as often as one branch asked for it. The fence's
 * activities in MockActivityEnvironment against a SQLite file store; branches as Temporal makes
 * them (a reset run keeps the run chain, replays the calls before its reset point, gets a new run id).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError, type ToolActivities } from '../../src/activities';
import type { FencedToolResult } from '../../src/activities/contract/contract';
import type { JsonValue } from '../../src/checkpoint/types';
import { packCallHashes, runOfCallId, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(180_000);

/** One branch of a run chain: its run and the ids of the calls of its history, in order. */
interface Branch {
  readonly runId: string;
  readonly calls: string[];
  /** The effect each call of the history was answered with. */
  readonly effects: Map<string, string>;
}

describe('occurrences of an intent across reset branches', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  /** A worker whose tool's schema a deploy made stricter: every call it gets fails before anything runs (INVALID_TOOL_INPUT). */
  let strict: ToolActivities;
  /** Effects applied, by intent (`title/priority`). */
  let applied: Map<string, string[]>;
  /** How many next effects the provider declines (after the claim: the refusal is stored as the call's result). */
  let declineNext = 0;
  let seq = 0;

  const tool = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: z.object({ title: z.string(), priority: z.enum(['low', 'normal']).default('normal') }),
    callDeadlineMs: 500,
    async execute(input) {
      if (declineNext > 0) {
        declineNext -= 1;
        throw new ToolError('rejected', 'the provider declined');
      }
      const intent = `${input.title}/${input.priority}`;
      const effects = applied.get(intent) ?? [];
      const id = `T-${intent}-${effects.length + 1}`;
      applied.set(intent, [...effects, id]);
      return { output: { ticket: id } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-occurrences-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({ store, tools: [tool], reconcileMarginMs: 100 });
    strict = createToolActivities({ store, tools: [defineTool({ ...tool, input: z.object({ title: z.string(), queue: z.string() }) } as never)], reconcileMarginMs: 100 });
  });
  beforeEach(() => {
    applied = new Map();
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new run chain: its workflow id and first branch (the chain's first run). */
  function newChain(): { workflowId: string; chain: string; first: Branch } {
    seq += 1;
    const chain = randomUUID();
    return { workflowId: `wf-occ-${seq}`, chain, first: { runId: chain, calls: [], effects: new Map() } };
  }

  /** A reset of `branch` to just after its first `cut` calls: a new run whose history holds them. */
  function reset(branch: Branch, cut: number): Branch {
    const calls = branch.calls.slice(0, cut);
    return { runId: randomUUID(), calls, effects: new Map(calls.map((c) => [c, branch.effects.get(c)!])) };
  }

  /** The agent workflow's call of `input` in `branch` (its id addressed in the branch's run), run through the fence. */
  async function callIn(at: { workflowId: string; chain: string }, branch: Branch, modelCallId: string, input: JsonValue): Promise<FencedToolResult> {
    const callId = runScopedCallId(modelCallId, branch.runId, at.chain);
    const others = branch.calls.filter((c) => runOfCallId(c, at.chain) !== branch.runId);
    branch.calls.push(callId);
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: at.workflowId, runId: branch.runId }, heartbeatTimeoutMs: 30_000 } as never);
    const result: FencedToolResult = await env.run(acts.runFencedTool, {
      tenant: 'acme',
      callId,
      runChainId: at.chain,
      toolName: 'create_ticket',
      input,
      occurrences: { scope: at.chain, ...(others.length > 0 ? { liveCalls: packCallHashes(others), liveRuns: [...new Set(others.map((c) => runOfCallId(c, at.chain)))] } : {}) },
    });
    branch.effects.set(callId, (result.outcome as unknown as { output: { ticket: string } }).output.ticket);
    return result;
  }

  it("a reset run's call of an intent the discarded branch applied is answered from that call's checkpoint, naming it", async () => {
    const at = newChain();
    const first = await callIn(at, at.first, 'toolu_1', { title: 'printer' });
    const branch = reset(at.first, 0);
    // Spelt otherwise by the model: the validated arguments are the same action.
    const again = await callIn(at, branch, 'toolu_2', { priority: 'normal', title: 'printer' });
    expect(first.source).toBe('executed');
    expect(again).toEqual(
      expect.objectContaining({ source: 'store', idempotencyKey: first.idempotencyKey, appliedByRun: { runId: at.chain, callId: 'toolu_1', recordedFor: branch.runId } }),
    );
    expect(again.callId).toBe(`toolu_2@${branch.runId}`);
    expect(applied.get('printer/normal')).toEqual(['T-printer/normal-1']);
    // Another intent runs as a call of its own.
    const other = await callIn(at, branch, 'toolu_3', { title: 'printer', priority: 'low' });
    expect(other.source).toBe('executed');
    expect(other.appliedByRun).toBeUndefined();
  });

  it("a call of the run's own history is passed by: the reset run's second call of an intent runs", async () => {
    const at = newChain();
    await callIn(at, at.first, 'toolu_1', { title: 'lamp' });
    const branch = reset(at.first, 1); // the first call is in the reset run's history
    const again = await callIn(at, branch, 'toolu_2', { title: 'lamp' });
    expect(again.source).toBe('executed');
    expect(applied.get('lamp/normal')).toHaveLength(2);
  });

  it('two calls of one intent at once in a reset run: one is answered by the discarded call, the other runs', async () => {
    const at = newChain();
    await callIn(at, at.first, 'toolu_1', { title: 'desk' });
    const branch = reset(at.first, 0);
    const results = await Promise.all([callIn(at, branch, 'toolu_2', { title: 'desk' }), callIn(at, branch, 'toolu_3', { title: 'desk' })]);
    expect(results.map((r) => r.source).sort()).toEqual(['executed', 'store']);
    expect(new Set(results.map((r) => r.idempotencyKey)).size).toBe(2);
    expect(applied.get('desk/normal')).toHaveLength(2);
  });

  it("a call the discarded run built and no attempt claimed, dispatched again in the reset run with that run's input, is refused; the reset run's own call of it runs", async () => {
    const at = newChain();
    await callIn(at, at.first, 'toolu_1', { title: 'shelf' });
    // toolu_2 was scheduled by the first run (its input names that run) and is dispatched again in the reset run.
    const branch = reset(at.first, 1);
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: at.workflowId, runId: branch.runId }, heartbeatTimeoutMs: 30_000 } as never);
    const scheduled = env.run(acts.runFencedTool, {
      tenant: 'acme',
      callId: 'toolu_2',
      runChainId: at.chain,
      toolName: 'create_ticket',
      input: { title: 'shelf' },
      occurrences: { scope: at.chain, builtInRun: at.chain },
    });
    await expect(scheduled).rejects.toThrow(/DISCARDED_BY_RESET/);
    branch.calls.push('toolu_2');
    expect(applied.get('shelf/normal')).toHaveLength(1);
    // The model asks again in the reset run: a second shelf, as the discarded run asked for two.
    expect((await callIn(at, branch, 'toolu_3', { title: 'shelf' })).source).toBe('executed');
    expect(applied.get('shelf/normal')).toHaveLength(2);
  });

  it('a continued run counts its occurrences afresh (another scope)', async () => {
    const at = newChain();
    await callIn(at, at.first, 'toolu_1', { title: 'chair' });
    const continued = { workflowId: at.workflowId, chain: at.chain };
    const run: Branch = { runId: randomUUID(), calls: [], effects: new Map() };
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: at.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    const result: FencedToolResult = await env.run(acts.runFencedTool, {
      tenant: 'acme',
      callId: runScopedCallId('toolu_2', run.runId, continued.chain),
      runChainId: continued.chain,
      toolName: 'create_ticket',
      input: { title: 'chair' },
      occurrences: { scope: at.chain + '-continued' },
    });
    expect(result.source).toBe('executed');
  });

  /**
   * The promise over generated histories, given each branch's calls as the effects they were
   * answered with: each of the two intents was applied as often as the branch that asked for it
   * most, and within a branch no two calls share an effect.
   */
  function expectAppliedAsOneBranchAsked(branchEffects: readonly (readonly string[])[]): void {
    for (const intent of [0, 1]) {
      const name = `t${intent}/normal`;
      const asked = (effects: readonly string[]) => effects.filter((e) => e.startsWith(`T-${name}-`)).length;
      expect(applied.get(name)?.length ?? 0).toBe(Math.max(...branchEffects.map(asked)));
    }
    for (const effects of branchEffects) expect(new Set(effects).size).toBe(effects.length);
  }

  /** A step of a generated history: a call (one of two intents, spelt two ways) in a branch, two at once, or a reset of a branch. */
  type Step = { kind: 'call'; branch: number; intent: number; spelt: boolean } | { kind: 'pair'; branch: number; intent: number } | { kind: 'reset'; branch: number; cut: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('call' as const), branch: fc.nat(7), intent: fc.nat(1), spelt: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('pair' as const), branch: fc.nat(7), intent: fc.nat(1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('reset' as const), branch: fc.nat(7), cut: fc.nat(8) }) },
  );

  it('property: over any history of calls and resets, each intent is applied as often as the branch that asked most, and every call of a branch has an effect of its own', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 24 }), async (steps) => {
        applied = new Map();
        const at = newChain();
        const branches: Branch[] = [at.first];
        let n = 0;
        const input = (intent: number, spelt: boolean): JsonValue => (spelt ? { priority: 'normal', title: `t${intent}` } : { title: `t${intent}` });
        for (const s of steps) {
          const branch = branches[s.branch % branches.length]!;
          if (s.kind === 'reset') branches.push(reset(branch, Math.min(s.cut, branch.calls.length)));
          else if (s.kind === 'call') await callIn(at, branch, `toolu_${(n += 1)}`, input(s.intent, s.spelt));
          else await Promise.all([callIn(at, branch, `toolu_${(n += 1)}`, input(s.intent, false)), callIn(at, branch, `toolu_${(n += 1)}`, input(s.intent, true))]);
        }
        expectAppliedAsOneBranchAsked(branches.map((b) => b.calls.map((c) => b.effects.get(c)!)));
      }),
      { seed: 20261220, numRuns: 40 },
    );
  });

  /**
   * One run of a chain with continue-as-new: its place in a lineage, the calls of its history
   * before it started (`before`), the calls of other runs it replayed (`replayed`) and its own.
   */
  interface Run {
    readonly runId: string;
    /** Its occurrence scope: a reset keeps it; a continue-as-new keeps it in a reset lineage, else starts the next. */
    readonly scope: string;
    /** The run its calls are addressed in: itself in a reset lineage, the chain's first run otherwise. */
    readonly addressIn: string;
    /** Whether it is of a reset lineage (a reset run, or continued from a run of one). */
    readonly inLineage: boolean;
    /**
     * What its start handed it (`ContinuedRun.resetLineage`): the lineage's earlier runs, the calls
     * other runs made that its reset runs replayed, and the calls of its history they rejected.
     */
    readonly lineage: { readonly runs: readonly string[]; readonly live: readonly string[]; readonly notRun: readonly string[] } | null;
    readonly before: readonly string[];
    readonly replayed: string[];
    readonly own: string[];
    /** The calls of its history it rejected (a person did; its own, or replayed rejections). */
    readonly rejected: Set<string>;
    /** The calls of `before` that earlier runs rejected (for the accounting: they have no effect in this branch). */
    readonly rejectedBefore: readonly string[];
    /** Set when it continued as new: it takes no more calls. */
    closed: boolean;
  }

  const historyOf = (run: Run): string[] => [...run.before, ...run.replayed, ...run.own];

  /** The agent workflow's call of `input` in `run`, run through the fence (as `toolInput` builds it). */
  async function callInRun(
    at: { workflowId: string; chain: string },
    run: Run,
    modelCallId: string,
    input: JsonValue,
    effects: Map<string, string>,
    plannedIn?: string,
    worker: ToolActivities = acts,
  ): Promise<void> {
    // A call planned in the run a reset discarded (before the reset point) keeps its id there and is of the reset run's history.
    const callId = runScopedCallId(modelCallId, plannedIn ?? run.addressIn, at.chain);
    (plannedIn === undefined ? run.own : run.replayed).push(callId);
    const live = [...(run.lineage?.live ?? []), ...run.replayed];
    const earlierRuns = run.lineage?.runs ?? [];
    const notRun = [...(run.lineage?.notRun ?? []), ...run.rejected];
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: at.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    const result = (await env
      .run(worker.runFencedTool, {
        tenant: 'acme',
        callId,
        runChainId: at.chain,
        toolName: 'create_ticket',
        input,
        occurrences: {
          scope: run.scope,
          ownCallsIn: run.addressIn,
          // The runs their adoptions are recorded for: the one each was made in, or the run that ran it after a reset.
          ...(live.length > 0 ? { liveCalls: packCallHashes(live), liveRuns: [...new Set(live.flatMap((c) => [runOfCallId(c, at.chain), ...(recordedFor.get(c) ?? [])]))] } : {}),
          ...(earlierRuns.length > 0 ? { earlierRuns: [...earlierRuns] } : {}),
          ...(notRun.length > 0 ? { notRun: packCallHashes(notRun) } : {}),
        },
      })
      .catch((error: Error) => error)) as FencedToolResult | Error;
    // Refused before anything ran: the workflow counts it notRun. Declined by the provider: the tool's own error result, no ticket.
    if (result instanceof Error) {
      expect(String(result)).toMatch(/INVALID_TOOL_INPUT/);
      run.rejected.add(callId);
      return;
    }
    if (!result.outcome.ok) {
      expect((result.outcome as { error: { type: string } }).error.type).toBe('BUSINESS_REJECTION');
      return;
    }
    effects.set(callId, (result.outcome as unknown as { output: { ticket: string } }).output.ticket);
    if (result.appliedByRun?.recordedFor !== undefined) recordedFor.set(callId, [result.appliedByRun.recordedFor]);
  }

  /** What the workflow keeps of a call's result: the run its adoption is recorded for (`appliedByRun.recordedFor`). */
  const recordedFor = new Map<string, string[]>();

  /** `run` continued as new. */
  function continueAsNew(run: Run): Run {
    run.closed = true;
    const runId = randomUUID();
    const base = { runId, before: historyOf(run), replayed: [], own: [], rejected: new Set<string>(), rejectedBefore: [...run.rejectedBefore, ...run.rejected], closed: false };
    if (!run.inLineage) return { ...base, scope: `after:${run.runId}`, addressIn: run.addressIn, inLineage: false, lineage: null };
    const lineage = {
      runs: [...(run.lineage?.runs ?? []), run.runId],
      live: [...(run.lineage?.live ?? []), ...run.replayed],
      notRun: [...(run.lineage?.notRun ?? []), ...run.rejected],
    };
    return { ...base, scope: run.scope, addressIn: runId, inLineage: true, lineage };
  }

  /** `run` reset to just after the first `cut` calls of its own history; null when the agent refuses it (an earlier run outside a reset lineage that continued as new). */
  function resetRun(run: Run, cut: number): Run | null {
    if (run.closed && !run.inLineage) return null;
    const runId = randomUUID();
    const replayed: string[] = [...run.replayed, ...run.own].slice(0, cut);
    const rejected = new Set(replayed.filter((c) => run.rejected.has(c)));
    return {
      runId,
      scope: run.scope,
      addressIn: runId,
      inLineage: true,
      lineage: run.lineage,
      before: run.before,
      replayed,
      own: [],
      rejected,
      rejectedBefore: run.rejectedBefore,
      closed: false,
    };
  }

  /**
   * A call `from` scheduled at the reset point that made `run` and no attempt claimed: Temporal
   * dispatches it again in `run` with the input `from` built (`builtInRun`). It is refused, and a
   * late attempt in `from` runs nothing either; it stays in `run`'s history with no effect.
   */
  async function dispatchedAgain(at: { workflowId: string; chain: string }, run: Run, from: Run, modelCallId: string, input: JsonValue): Promise<void> {
    const callId = runScopedCallId(modelCallId, from.addressIn, at.chain);
    run.replayed.push(callId);
    const built = {
      tenant: 'acme',
      callId,
      runChainId: at.chain,
      toolName: 'create_ticket',
      input,
      occurrences: { scope: from.scope, ownCallsIn: from.addressIn, builtInRun: from.runId },
    };
    const inRun = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: at.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    await expect(inRun.run(acts.runFencedTool, built)).rejects.toThrow(/DISCARDED_BY_RESET/);
    const late = new MockActivityEnvironment({ attempt: 2, workflowExecution: { workflowId: at.workflowId, runId: from.runId }, heartbeatTimeoutMs: 30_000 } as never);
    const lateResult = (await late.run(acts.runFencedTool, built).catch(() => null)) as FencedToolResult | null;
    expect(lateResult?.outcome.ok ?? false).toBe(false);
  }

  /** A step: a call in the open run, two at once, its continue-as-new, or a reset of any run (with a call of its history left to run or dispatched again, or none). */
  type ChainStep =
    | { kind: 'call'; intent: number; spelt: boolean }
    | { kind: 'pair'; intent: number }
    | { kind: 'continue' }
    | { kind: 'reject'; intent: number; by: 'person' | 'provider' | 'schema' }
    | { kind: 'reset'; run: number; cut: number; pending: number | null; dispatched: number | null };
  const chainStep: fc.Arbitrary<ChainStep> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('call' as const), intent: fc.nat(1), spelt: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('pair' as const), intent: fc.nat(1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('continue' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('reject' as const), intent: fc.nat(1), by: fc.constantFrom('person' as const, 'provider' as const, 'schema' as const) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('reset' as const), run: fc.nat(9), cut: fc.nat(6), pending: fc.option(fc.nat(1)), dispatched: fc.option(fc.nat(1)) }),
    },
  );

  it('property: with continue-as-new anywhere (also in reset lineages, at other calls than the discarded runs), each intent is applied as often as the branch that asked most', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(chainStep, { minLength: 1, maxLength: 24 }), async (steps) => {
        applied = new Map();
        const at = newChain();
        const effects = new Map<string, string>();
        const runs: Run[] = [
          {
            runId: at.chain,
            scope: `first:${at.chain}`,
            addressIn: at.chain,
            inLineage: false,
            lineage: null,
            before: [],
            replayed: [],
            own: [],
            rejected: new Set<string>(),
            rejectedBefore: [],
            closed: false,
          },
        ];
        let n = 0;
        const input = (intent: number, spelt: boolean): JsonValue => (spelt ? { priority: 'normal', title: `t${intent}` } : { title: `t${intent}` });
        // As Temporal runs a chain: one run open at a time (the last one started); a reset may go to any run.
        let current = runs[0]!;
        const pending = new Map<string, { modelCallId: string; intent: number }>();
        /** The model id and intent of each call a person rejected. */
        const planned = new Map<string, { modelCallId: string; intent: number }>();
        for (const s of steps) {
          if (s.kind === 'reset') {
            const run = runs[s.run % runs.length]!;
            const next = resetRun(run, Math.min(s.cut, run.replayed.length + run.own.length));
            if (next === null) continue;
            runs.push(next);
            current = next;
            // The call the reset point is before, which a person rejected in the discarded branch: approved in the reset run, it runs
            // there under its id (any run's, also one that continued as new).
            const waiting = [...run.replayed, ...run.own][next.replayed.length];
            if (s.pending !== null && waiting !== undefined && run.rejected.has(waiting)) {
              const call = planned.get(waiting)!;
              await callInRun(at, next, call.modelCallId, input(call.intent, false), effects, runOfCallId(waiting, at.chain));
            }
            // A call planned before the reset point that never ran there (it waited for a person): the reset run runs it.
            // Every reset to that point replays the same call: one id, one intent.
            // (Only in a reset of the open run: a run that continued as new decided every call before.)
            else if (s.pending !== null && !run.closed) {
              const cut = next.replayed.length;
              const planned = pending.get(`${run.runId}/${cut}`) ?? { modelCallId: `toolu_${(n += 1)}`, intent: s.pending };
              pending.set(`${run.runId}/${cut}`, planned);
              await callInRun(at, next, planned.modelCallId, input(planned.intent, false), effects, run.addressIn);
            }
            if (s.dispatched !== null) await dispatchedAgain(at, next, run, `toolu_${(n += 1)}`, input(s.dispatched, false));
            continue;
          }
          const run = current;
          if (s.kind === 'reject') {
            // A call the model asks for that applies nothing: a person rejects it, the provider declines it after its claim, or a
            // worker after a schema deploy refuses it before anything runs. A reset to before it may run it (approved, fixed).
            const modelCallId = `toolu_${(n += 1)}`;
            const callId = runScopedCallId(modelCallId, run.addressIn, at.chain);
            planned.set(callId, { modelCallId, intent: s.intent });
            if (s.by === 'person') {
              run.own.push(callId);
              run.rejected.add(callId);
            } else {
              if (s.by === 'provider') declineNext = 1;
              // (A call answered from a discarded branch's checkpoint never reaches the provider: it keeps that effect.)
              await callInRun(at, run, modelCallId, input(s.intent, false), effects, undefined, s.by === 'schema' ? strict : acts);
              declineNext = 0;
            }
          } else if (s.kind === 'continue') runs.push((current = continueAsNew(run)));
          else if (s.kind === 'call') await callInRun(at, run, `toolu_${(n += 1)}`, input(s.intent, s.spelt), effects);
          else
            await Promise.all([callInRun(at, run, `toolu_${(n += 1)}`, input(s.intent, false), effects), callInRun(at, run, `toolu_${(n += 1)}`, input(s.intent, true), effects)]);
        }
        // A call refused in its reset run has no effect there.
        // A call a branch rejected has no effect there (another branch may have run it).
        const ran = (r: Run) => (c: string) => !r.rejected.has(c) && !r.rejectedBefore.includes(c);
        expectAppliedAsOneBranchAsked(
          runs.map((r) =>
            historyOf(r)
              .filter(ran(r))
              .flatMap((c) => effects.get(c) ?? []),
          ),
        );
      }),
      { seed: 20261225, numRuns: 150 },
    );
  });
});
