/**
 * The fenced tool activity on a real Temporal dev server with a real SQLite store: a retried
 * attempt finding each status does what docs/protocol.md#the-fenced-attempt says.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import {
  callBindingId,
  claimDelivery,
  claimExecution,
  completeExecution,
  completeDelivery,
  createCheckpoint,
  fingerprintInput,
  idempotencyKey,
  markExecutionUncertain,
  type Binding,
  type CheckpointRecord,
  type Status,
  type TransitionResult,
} from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createToolActivities, defineTool, type ToolContext } from '../../src/activities';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { callToolOnce } from '../fixtures/fenced-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const TENANT = 'acme';
const STORED = { ok: true, output: { ticketId: 'T-stored' }, receipt: { receipt: 'r-stored' } };

interface Probe {
  executions: ToolContext[];
  lookups: ToolContext[];
  lookupAnswer: 'found' | 'absent';
}

function makeTool(name: string, probe: Probe, options: { lookup: boolean; dedupesByKey: boolean }) {
  return defineTool({
    name,
    revision: 'v1',
    input: z.object({ title: z.string().min(1) }).strict(),
    dedupesByKey: options.dedupesByKey,
    ...(options.dedupesByKey ? { keyRetentionMs: 2 * 365 * 24 * 60 * 60 * 1_000 } : {}),
    async execute(input, ctx) {
      probe.executions.push(ctx);
      return { output: { ticketId: `T-${input.title}` }, receipt: { key: ctx.idempotencyKey } };
    },
    ...(options.lookup
      ? {
          async lookup(ctx: ToolContext) {
            probe.lookups.push(ctx);
            return probe.lookupAnswer === 'found' ? { found: true as const, output: { ticketId: 'T-found' }, receipt: { via: 'lookup' } } : { found: false as const };
          },
        }
      : {}),
  });
}

describe('fenced tool activity on a real server', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let probe: Probe;
  let worker: Worker;
  let workerRun: Promise<void>;
  let counter = 0;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-fenced-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    probe = { executions: [], lookups: [], lookupAnswer: 'absent' };
    const tools = [
      makeTool('with_lookup', probe, { lookup: true, dedupesByKey: false }),
      makeTool('dedupes_by_key', probe, { lookup: false, dedupesByKey: true }),
      makeTool('no_reconcile', probe, { lookup: false, dedupesByKey: false }),
    ];
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'fenced-tool-test',
      workflowsPath: require.resolve('../fixtures/fenced-workflows'),
      activities: createToolActivities({ store, tools }),
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

  beforeEach(() => {
    probe.executions.length = 0;
    probe.lookups.length = 0;
    probe.lookupAnswer = 'absent';
  });

  /** Seeds the checkpoint a call will find, as an earlier attempt would have left it. */
  async function seed(workflowId: string, callId: string, toolName: string, input: unknown, status: Status): Promise<Binding> {
    const binding: Binding = {
      namespace: `default/${TENANT}`,
      callId: callBindingId({ runChainId: chainOf(workflowId), workflowId, callId }),
      toolName,
      toolRevision: 'v1',
      inputFingerprint: fingerprintInput(input),
    };
    let record: CheckpointRecord = createCheckpoint(binding, { createdAt: '2026-01-01T00:00:00.000Z' });
    await store.createIfAbsent(record);
    const steps: Array<(r: CheckpointRecord) => TransitionResult> = [];
    const at = '2026-01-01T00:00:01.000Z';
    if (status !== 'ready') steps.push((r) => claimExecution(r, { attemptId: 'attempt-dead', at }));
    if (status === 'uncertain') steps.push((r) => markExecutionUncertain(r, { attemptId: 'attempt-dead', at, reason: 'worker lost' }));
    if (['completed', 'delivering', 'delivered'].includes(status)) steps.push((r) => completeExecution(r, { attemptId: 'attempt-dead', at, result: STORED }));
    if (['delivering', 'delivered'].includes(status)) steps.push((r) => claimDelivery(r, { deliveryId: 'delivery-dead', at }));
    if (status === 'delivered') steps.push((r) => completeDelivery(r, { deliveryId: 'delivery-dead', at }));
    for (const step of steps) {
      const t = step(record);
      expect(await store.compareAndSwap(t.expectedRevision, t.next)).toBe(true);
      record = t.next;
    }
    return binding;
  }

  async function attempt(workflowId: string, callId: string, toolName: string, input: unknown) {
    return env.client.workflow.execute(callToolOnce, {
      workflowId,
      taskQueue: 'fenced-tool-test',
      args: [{ tenant: TENANT, callId, runChainId: chainOf(workflowId), toolName, input: input as never }],
    });
  }

  /** The run chain the fixture workflow passes (the tests name it, so they can seed checkpoints before the run starts). */
  function chainOf(workflowId: string): string {
    return `chain-${workflowId}`;
  }

  function ids() {
    counter += 1;
    return { workflowId: `wf-fenced-${counter}-${Date.now()}`, callId: `toolu_${counter}` };
  }

  it('a never-claimed call executes once and is delivered: ready → delivered', async () => {
    const { workflowId, callId } = ids();
    const input = { title: 'first' };
    const out = await attempt(workflowId, callId, 'no_reconcile', input);
    expect(out).toEqual({
      result: expect.objectContaining({ source: 'executed', outcome: { ok: true, output: { ticketId: 'T-first' }, receipt: { key: probe.executions[0]!.idempotencyKey } } }),
    });
    expect(probe.executions).toHaveLength(1);
    expect(probe.executions[0]!.idempotencyKey).toBe(
      idempotencyKey({ namespace: `default/${TENANT}`, runChainId: chainOf(workflowId), workflowId, callId, toolName: 'no_reconcile', toolRevision: 'v1' }),
    );
    const binding = {
      namespace: `default/${TENANT}`,
      callId: callBindingId({ runChainId: chainOf(workflowId), workflowId, callId }),
      toolName: 'no_reconcile',
      toolRevision: 'v1',
      inputFingerprint: fingerprintInput(input),
    };
    expect((await store.get(binding))?.status).toBe('delivered');
  });

  it('a completed call is delivered from the store; the tool is not called', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'x' }, 'completed');
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'x' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'store', outcome: STORED }) });
    expect(probe.executions).toHaveLength(0);
    expect((await store.get(binding))?.status).toBe('delivered');
  });

  it('a delivering call is released and redelivered; the tool is not called', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'x' }, 'delivering');
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'x' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'store', outcome: STORED }) });
    expect(probe.executions).toHaveLength(0);
    const record = await store.get(binding);
    expect(record?.status).toBe('delivered');
    expect(record?.delivery?.deliveryId).not.toBe('delivery-dead');
  });

  it('a delivered call returns the stored payload again without writing', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'x' }, 'delivered');
    const before = await store.get(binding);
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'x' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'store', outcome: STORED }) });
    expect(probe.executions).toHaveLength(0);
    expect((await store.get(binding))?.revision).toBe(before?.revision);
  });

  it('an executing call whose lookup finds the effect is completed from the lookup; the tool is not called', async () => {
    const { workflowId, callId } = ids();
    probe.lookupAnswer = 'found';
    const binding = await seed(workflowId, callId, 'with_lookup', { title: 'x' }, 'executing');
    const out = await attempt(workflowId, callId, 'with_lookup', { title: 'x' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'lookup', outcome: { ok: true, output: { ticketId: 'T-found' }, receipt: { via: 'lookup' } } }) });
    expect(probe.lookups).toHaveLength(1);
    expect(probe.executions).toHaveLength(0);
    const record = await store.get(binding);
    expect(record?.status).toBe('delivered');
    expect(record?.execution?.previousAttemptId).toBe('attempt-dead');
  });

  it('an executing call whose lookup proves absence runs once under the same idempotency key', async () => {
    const { workflowId, callId } = ids();
    await seed(workflowId, callId, 'with_lookup', { title: 'y' }, 'executing');
    const out = await attempt(workflowId, callId, 'with_lookup', { title: 'y' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'executed', outcome: expect.objectContaining({ ok: true, output: { ticketId: 'T-y' } }) }) });
    expect(probe.lookups).toHaveLength(1);
    expect(probe.executions).toHaveLength(1);
    expect(probe.executions[0]!.idempotencyKey).toBe(probe.lookups[0]!.idempotencyKey);
  });

  it('an executing call of a provider that deduplicates by key is repeated with the same key', async () => {
    const { workflowId, callId } = ids();
    await seed(workflowId, callId, 'dedupes_by_key', { title: 'z' }, 'executing');
    const out = await attempt(workflowId, callId, 'dedupes_by_key', { title: 'z' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'same-key-repeat' }) });
    expect(probe.executions).toHaveLength(1);
    expect(probe.executions[0]!.idempotencyKey).toBe(
      idempotencyKey({ namespace: `default/${TENANT}`, runChainId: chainOf(workflowId), workflowId, callId, toolName: 'dedupes_by_key', toolRevision: 'v1' }),
    );
  });

  it('an executing call without lookup or key deduplication pauses as OUTCOME_UNKNOWN and is marked uncertain', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'x' }, 'executing');
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'x' });
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
    expect(probe.executions).toHaveLength(0);
    expect((await store.get(binding))?.status).toBe('uncertain');
  });

  it('an uncertain call without lookup stays uncertain and pauses again', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'x' }, 'uncertain');
    const before = await store.get(binding);
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'x' });
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
    expect(probe.executions).toHaveLength(0);
    expect(await store.get(binding)).toEqual(before);
  });

  it('invalid tool input is a non-retryable INVALID_TOOL_INPUT and writes nothing', async () => {
    const { workflowId, callId } = ids();
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: '' });
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'INVALID_TOOL_INPUT', nonRetryable: true }) });
    expect(await store.listByStatus(['ready', 'executing'], {})).toEqual([]);
  });

  it('an unknown tool is a non-retryable UNKNOWN_TOOL', async () => {
    const { workflowId, callId } = ids();
    const out = await attempt(workflowId, callId, 'no_such_tool', { title: 'x' });
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'UNKNOWN_TOOL', nonRetryable: true }) });
  });

  it('the same call id with a different input, never claimed, is a non-retryable BINDING_CONFLICT (nothing applied), and the stored record is untouched', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'original' }, 'ready');
    const before = await store.get(binding);
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'changed' });
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'BINDING_CONFLICT', nonRetryable: true }) });
    expect(probe.executions).toHaveLength(0);
    expect(await store.get(binding)).toEqual(before);
  });

  it('the same call id with a different input after the result was stored delivers the stored result, naming the binding it was stored under (docs/protocol.md#nothing-applied)', async () => {
    const { workflowId, callId } = ids();
    const binding = await seed(workflowId, callId, 'no_reconcile', { title: 'original' }, 'completed');
    const out = await attempt(workflowId, callId, 'no_reconcile', { title: 'changed' });
    expect(out).toEqual({ result: expect.objectContaining({ source: 'store', outcome: STORED, storedUnder: { toolName: 'no_reconcile', toolRevision: 'v1' } }) });
    expect(probe.executions).toHaveLength(0);
    expect((await store.get(binding))?.status).toBe('delivered');
  });
});
