/**
 * compensateToolCall on a real Temporal dev server with a real SQLite store: a tool's
 * declared compensation (by another tool, or by a function with its own revision) runs as its own
 * fenced call, once, under a `ttcc-` key derived from the original call's; a later attempt
 * delivers it from the store; a call that applied nothing is never compensated; a compensation
 * whose outcome is unknown is settled by its lookup or pauses for a person, whose resolution is
 * stored in the compensation's checkpoint.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createToolActivities, defineTool, ToolError, type ToolContext } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import type { AppliedEffect } from '../../src/activities/tools/compensation-declaration';
import { compensationBindingCallId } from '../../src/activities/fence/compensation-call';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runSteps, type Step, type StepOutcome } from '../fixtures/compensation-workflows';

installQuietTemporalRuntime();
jest.setTimeout(60_000);

const TENANT = 'acme';
const TASK_QUEUE = 'compensation-test';

/** What the compensating effects saw: one entry per effect actually applied. */
interface Effects {
  releases: Array<{ input: unknown; key: string }>;
  refunds: Array<{ applied: AppliedEffect; key: string }>;
  cancels: string[];
  unbooks: string[];
  unbookLookups: string[];
}

describe('compensateToolCall on a real server', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let workerRun: Promise<void>;
  let offsetMs = 0;
  let runs = 0;
  const effects: Effects = { releases: [], refunds: [], cancels: [], unbooks: [], unbookLookups: [] };

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-compensation-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    // An unknown compensation outcome jumps the fence's clock past the claim's settle time, so the next attempt reconciles without waiting.
    const jumpPastSettleTime = (): void => {
      offsetMs += 10 * 60_000;
    };
    const tools = [
      defineTool({
        name: 'reserve',
        revision: 'v1',
        input: z.object({ sku: z.string(), quantity: z.number().int().default(1) }),
        async execute(input) {
          return { output: { reservationId: `R-${input.sku}` }, receipt: { hold: input.quantity } };
        },
        compensation: { tool: 'release', input: (applied: AppliedEffect) => ({ reservationId: (applied.output as { reservationId: string }).reservationId }) },
      }),
      defineTool({
        name: 'release',
        revision: 'r1',
        input: z.object({ reservationId: z.string() }).strict(),
        async execute(input, ctx) {
          effects.releases.push({ input, key: ctx.idempotencyKey });
          return { output: { released: input.reservationId } };
        },
      }),
      defineTool({
        name: 'reserve_badly',
        revision: 'v1',
        input: z.object({ sku: z.string() }),
        async execute(input) {
          return { output: { reservationId: `R-${input.sku}` } };
        },
        compensation: { tool: 'release', input: () => ({ reservation: 'no such field' }) },
      }),
      defineTool({
        name: 'charge',
        revision: 'v1',
        input: z.object({ amountCents: z.number().int(), currency: z.string().default('EUR') }),
        async execute(input) {
          if (input.amountCents <= 0) throw new ToolError('rejected', 'amount must be positive');
          return { output: { chargeId: `ch-${input.amountCents}` }, receipt: { psp: 'p-1' } };
        },
        compensation: {
          revision: 'refund-v1',
          async execute(applied: AppliedEffect, ctx: ToolContext) {
            effects.refunds.push({ applied, key: ctx.idempotencyKey });
            return { output: { refunded: (applied.output as { chargeId: string }).chargeId }, receipt: { refundKey: ctx.idempotencyKey } };
          },
        },
      }),
      defineTool({
        name: 'ship',
        revision: 'v1',
        input: z.object({ orderId: z.string() }),
        async execute(input) {
          return { output: { shipmentId: `S-${input.orderId}` } };
        },
        compensation: {
          revision: 'cancel-v1',
          callDeadlineMs: 1_000,
          async execute(applied: AppliedEffect, ctx: ToolContext) {
            effects.cancels.push(ctx.idempotencyKey);
            jumpPastSettleTime();
            throw new ToolError('unknown-outcome', 'the carrier timed out after the cancellation was sent');
          },
        },
      }),
      defineTool({
        name: 'book',
        revision: 'v1',
        input: z.object({ room: z.string() }),
        async execute(input) {
          return { output: { bookingId: `B-${input.room}` } };
        },
        compensation: {
          revision: 'unbook-v1',
          callDeadlineMs: 1_000,
          async execute(applied: AppliedEffect, ctx: ToolContext) {
            effects.unbooks.push(ctx.idempotencyKey);
            jumpPastSettleTime();
            throw new ToolError('unknown-outcome', 'the hotel API reset the connection');
          },
          async lookup(ctx: ToolContext) {
            effects.unbookLookups.push(ctx.idempotencyKey);
            return { found: true as const, output: { unbooked: 'found by key' }, receipt: { via: 'lookup' } };
          },
        },
      }),
      defineTool({
        name: 'note',
        revision: 'v1',
        input: z.object({ text: z.string() }),
        async execute(input) {
          return { output: { noted: input.text } };
        },
      }),
    ];
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('../fixtures/compensation-workflows'),
      activities: createToolActivities({ store, tools, clock: () => new Date(Date.now() + offsetMs), reconcileMarginMs: 0 }),
    });
    workerRun = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await workerRun;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `steps` in one workflow; returns each step's outcome and the run's binding call id of `callId`. */
  async function run(
    steps: (ids: { call: (callId: string, toolName: string, input: unknown) => FencedToolInput }) => Step[],
  ): Promise<{ outcomes: StepOutcome[]; bindingOf: (callId: string) => string }> {
    runs += 1;
    const workflowId = `compensation-${runs}`;
    const list = steps({ call: (callId, toolName, input) => ({ tenant: TENANT, callId, toolName, input: input as never }) });
    const handle = await env.client.workflow.start(runSteps, { taskQueue: TASK_QUEUE, workflowId, args: [list] });
    const outcomes = await handle.result();
    return { outcomes, bindingOf: (callId) => callBindingId({ runChainId: handle.firstExecutionRunId, workflowId, callId }) };
  }
  const compensate = (call: FencedToolInput, generation?: number): Step => ({
    compensate: { ...call, role: 'compensation', ...(generation === undefined ? {} : { compensationGeneration: generation }) },
  });
  const called = (outcome: StepOutcome | undefined): FencedToolResult => {
    if (outcome === undefined || !('result' in outcome)) throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
    return outcome.result as FencedToolResult;
  };
  const compensated = (outcome: StepOutcome | undefined): Extract<CompensateToolCallResult, { declared: true }> => {
    const result = called(outcome) as unknown as CompensateToolCallResult;
    if (!result.declared) throw new Error('expected a declared compensation');
    return result;
  };
  const failed = (outcome: StepOutcome | undefined): Extract<StepOutcome, { failure: unknown }>['failure'] => {
    if (outcome === undefined || !('failure' in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome)}`);
    return outcome.failure;
  };

  test('a compensation by another tool runs once; a later attempt delivers it from the store under the same ttcc- key, which is not the original key; a later generation never runs it again', async () => {
    const releasesBefore = effects.releases.length;
    let reserve!: FencedToolInput;
    const { outcomes, bindingOf } = await run(({ call }) => {
      reserve = call('c-1', 'reserve', { sku: 'sku-7' });
      return [{ call: reserve }, compensate(reserve), compensate(reserve), compensate(reserve, 2), compensate(reserve, 5)];
    });
    const original = called(outcomes[0]);
    const [first, second] = [compensated(outcomes[1]), compensated(outcomes[2])];

    expect(first.compensation).toEqual({ toolName: 'release', toolRevision: 'r1' });
    expect(first.result).toMatchObject({
      callId: 'c-1',
      toolName: 'release',
      toolRevision: 'r1',
      source: 'executed',
      outcome: { ok: true, output: { released: 'R-sku-7' }, receipt: null },
    });
    expect(second.result).toMatchObject({ source: 'store', outcome: first.result.outcome, idempotencyKey: first.result.idempotencyKey });
    expect(first.result.idempotencyKey).toMatch(/^ttcc-[0-9a-f]{64}$/);
    expect(first.result.idempotencyKey).not.toBe(original.idempotencyKey);
    // Generation 2 runs only after generation 1 did not succeed; it did, so it is refused, as is a generation with none before it.
    expect(failed(outcomes[3])).toMatchObject({ type: 'NOTHING_TO_COMPENSATE', details: { reason: 'compensated' } });
    expect(failed(outcomes[4])).toMatchObject({ type: 'INVALID_ARGUMENT', details: { field: 'compensationGeneration' } });
    expect(effects.releases.slice(releasesBefore)).toEqual([{ input: { reservationId: 'R-sku-7' }, key: first.result.idempotencyKey }]);
    // The compensation has its own checkpoint; the original call's stays as it was.
    const namespace = `default/${TENANT}`;
    const own = await store.getByCall(namespace, compensationBindingCallId(bindingOf('c-1'), 1));
    expect(own).toMatchObject({ status: 'delivered', binding: { toolName: 'release', toolRevision: 'r1' }, result: { payload: first.result.outcome } });
    expect(await store.getByCall(namespace, bindingOf('c-1'))).toMatchObject({ status: 'delivered', binding: { toolName: 'reserve' }, result: { payload: original.outcome } });
  });

  test('a compensation by a function gets the applied effect from the store, runs once as <tool>~compensation, and is delivered from the store after', async () => {
    const refundsBefore = effects.refunds.length;
    const { outcomes } = await run(({ call }) => {
      const charge = call('c-1', 'charge', { amountCents: 1250 });
      return [{ call: charge }, compensate(charge), compensate(charge)];
    });
    const original = called(outcomes[0]);
    const [first, second] = [compensated(outcomes[1]), compensated(outcomes[2])];
    expect(first.compensation).toEqual({ toolName: 'charge~compensation', toolRevision: 'refund-v1' });
    expect(first.result).toMatchObject({ source: 'executed', outcome: { ok: true, output: { refunded: 'ch-1250' }, receipt: { refundKey: first.result.idempotencyKey } } });
    expect(second.result).toMatchObject({ source: 'store', outcome: first.result.outcome, idempotencyKey: first.result.idempotencyKey });
    expect(first.result.idempotencyKey).not.toBe(original.idempotencyKey);
    // The arguments as the tool's schema gave them (default filled), the stored output and receipt.
    expect(effects.refunds.slice(refundsBefore)).toEqual([
      { applied: { args: { amountCents: 1250, currency: 'EUR' }, output: { chargeId: 'ch-1250' }, receipt: { psp: 'p-1' } }, key: first.result.idempotencyKey },
    ]);
  });

  test('nothing is compensated for a call that applied nothing: never run, or ended with an error (NOTHING_TO_COMPENSATE); a tool without a compensation is { declared: false }; a compensation input its tool refuses is INVALID_TOOL_INPUT; a compensation that never started cannot be resolved', async () => {
    const [refundsBefore, releasesBefore] = [effects.refunds.length, effects.releases.length];
    const { outcomes } = await run(({ call }) => {
      const rejected = call('c-rejected', 'charge', { amountCents: 0 });
      const badly = call('c-badly', 'reserve_badly', { sku: 'x' });
      const note = call('c-note', 'note', { text: 'hi' });
      const applied = call('c-applied', 'charge', { amountCents: 7 });
      return [
        compensate(call('c-never', 'charge', { amountCents: 5 })),
        { call: rejected },
        compensate(rejected),
        { call: note },
        compensate(note),
        { call: badly },
        compensate(badly),
        { call: applied },
        // runFencedTool never runs a compensation (it would run the original tool again).
        { call: { ...applied, role: 'compensation' } },
        // A person cannot resolve a compensation that never started: the original call's own checkpoint is never taken for it.
        { resolve: { ...applied, role: 'compensation', resolution: 'applied', result: { ok: true, output: { refunded: 'by hand' }, receipt: null }, reason: 'refunded by hand' } },
      ];
    });
    expect(failed(outcomes[0])).toMatchObject({ type: 'NOTHING_TO_COMPENSATE', nonRetryable: true, details: { callId: 'c-never', status: 'absent' } });
    expect(called(outcomes[1]).outcome).toMatchObject({ ok: false, error: { type: 'BUSINESS_REJECTION' } });
    expect(failed(outcomes[2])).toMatchObject({ type: 'NOTHING_TO_COMPENSATE', nonRetryable: true, details: { callId: 'c-rejected', status: 'delivered' } });
    expect(called(outcomes[4])).toEqual({ declared: false });
    expect(failed(outcomes[6])).toMatchObject({ type: 'INVALID_TOOL_INPUT', nonRetryable: true, details: { toolName: 'release', callId: 'c-badly' } });
    expect(failed(outcomes[8])).toMatchObject({ type: 'INVALID_ARGUMENT', nonRetryable: true, details: { field: 'role' } });
    expect(failed(outcomes[9])).toMatchObject({ type: 'INVALID_ARGUMENT', nonRetryable: true, details: { callId: 'c-applied' } });
    expect(effects.refunds.length).toBe(refundsBefore);
    expect(effects.releases.length).toBe(releasesBefore);
  });

  test("a compensation whose outcome is unknown and that has no lookup pauses (OUTCOME_UNKNOWN); a person's applied result is stored in its checkpoint and delivered after, without running it again", async () => {
    const cancelsBefore = effects.cancels.length;
    const resolved = { ok: true as const, output: { cancelled: 'confirmed by the carrier' }, receipt: { ticket: 'CS-1' } };
    const { outcomes } = await run(({ call }) => {
      const ship = call('c-1', 'ship', { orderId: 'o-9' });
      return [
        { call: ship },
        compensate(ship),
        compensate(ship),
        { resolve: { ...ship, role: 'compensation', resolution: 'applied', result: resolved, reason: 'carrier portal shows the cancellation' } },
        compensate(ship),
      ];
    });
    // The first attempt pauses at once (nothing can reconcile it); a second one, past the settle time, neither runs it again.
    expect(failed(outcomes[1])).toMatchObject({ type: 'OUTCOME_UNKNOWN', nonRetryable: true, details: { callId: 'c-1', toolName: 'ship~compensation' } });
    expect(failed(outcomes[2])).toMatchObject({ type: 'OUTCOME_UNKNOWN', nonRetryable: true, details: { callId: 'c-1', toolName: 'ship~compensation' } });
    const resolution = called(outcomes[3]);
    const after = compensated(outcomes[4]);
    expect(resolution).toMatchObject({ callId: 'c-1', toolName: 'ship~compensation', toolRevision: 'cancel-v1', outcome: resolved, idempotencyKey: after.result.idempotencyKey });
    expect(after.result).toMatchObject({ source: 'store', outcome: resolved });
    expect(effects.cancels.slice(cancelsBefore)).toEqual([after.result.idempotencyKey]);
  });

  test('a compensation whose outcome is unknown is settled by its lookup under its own key, without running it again', async () => {
    const [unbooksBefore, lookupsBefore] = [effects.unbooks.length, effects.unbookLookups.length];
    const { outcomes } = await run(({ call }) => {
      const book = call('c-1', 'book', { room: '12' });
      return [{ call: book }, compensate(book), compensate(book)];
    });
    expect(failed(outcomes[1])).toMatchObject({ type: 'RECONCILE_PENDING', nonRetryable: false });
    const settled = compensated(outcomes[2]);
    expect(settled.result).toMatchObject({
      source: 'lookup',
      toolName: 'book~compensation',
      outcome: { ok: true, output: { unbooked: 'found by key' }, receipt: { via: 'lookup' } },
    });
    expect(effects.unbooks.slice(unbooksBefore)).toEqual([settled.result.idempotencyKey]);
    expect(effects.unbookLookups.slice(lookupsBefore)).toEqual([settled.result.idempotencyKey]);
  });
});
