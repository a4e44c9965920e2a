/**
 * The trust model: a run's tenant, tool list, approval policy and model come
 * from its workflow input, so whoever can start a workflow chooses them. A worker pins what it
 * serves; input asking for anything else is refused with a typed error and nothing runs: at the
 * activities (users' workflows call them directly) and end to end through the agent workflow on
 * a real Temporal dev server; and `pending`, `show`, `resolve` show and filter by tenant.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolDefinition } from '../../src/activities';
import type { FencedToolInput, FencedToolResult, ToolCallDescription } from '../../src/activities/contract/contract';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { resolveConfig } from '../../src/config';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { workerPins } from '../../src/worker';
import { agentWorkflow, approveCallUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, RunStatusView } from '../../src/workflows/agent/types';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const PINS = { pinnedTenants: ['acme'], pinnedTools: ['create_ticket', 'refund'], requireApproval: ['refund'] } as const;

/** Tools that count their executions. */
function countingTools(executions: Record<string, number>): ToolDefinition<any>[] {
  const tool = (name: string): ToolDefinition<any> =>
    defineTool({
      name,
      revision: 'v1',
      input: z.object({ amount: z.number().optional() }),
      async execute() {
        executions[name] = (executions[name] ?? 0) + 1;
        return { output: { done: name } };
      },
    });
  return ['create_ticket', 'refund', 'delete_everything'].map(tool);
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => new Error('expected a refusal'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('the activities refuse input outside the worker pins', () => {
  let dir: string;
  let store: CheckpointStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-trust-unit-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const activityEnv = (): MockActivityEnvironment => new MockActivityEnvironment({ workflowExecution: { workflowId: `wf-${Math.random()}`, runId: 'run-1' }, attempt: 1 } as never);
  const call = (overrides: Partial<FencedToolInput>): FencedToolInput => ({ tenant: 'acme', callId: 'c1', toolName: 'create_ticket', input: {}, ...overrides });
  const written = async (): Promise<number> => (await store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 1_000 })).length;

  it('runFencedTool refuses another tenant, a tool outside the pin, and a pinned-approval tool without an approved intent; nothing written or run', async () => {
    const executions: Record<string, number> = {};
    const acts = createToolActivities({ store, tools: countingTools(executions), ...PINS });
    const tenant = await failureOf(activityEnv().run(acts.runFencedTool, call({ tenant: 'globex' })));
    expect(tenant.type).toBe('NOT_PINNED');
    expect(tenant.nonRetryable).toBe(true);
    expect(tenant.details?.[0]).toMatchObject({ field: 'tenant' });
    const tool = await failureOf(activityEnv().run(acts.runFencedTool, call({ toolName: 'delete_everything' })));
    expect(tool.type).toBe('NOT_PINNED');
    expect(tool.details?.[0]).toMatchObject({ field: 'toolName' });
    const approval = await failureOf(activityEnv().run(acts.runFencedTool, call({ toolName: 'refund', input: { amount: 5 } })));
    expect(approval.type).toBe('APPROVAL_REQUIRED');
    expect(approval.nonRetryable).toBe(true);
    expect(executions).toEqual({});
    expect(await written()).toBe(0);
    // describeToolCall and resolveToolCall refuse another tenant too.
    expect((await failureOf(activityEnv().run(acts.describeToolCall, call({ tenant: 'globex' })))).type).toBe('NOT_PINNED');
    expect((await failureOf(activityEnv().run(acts.describeToolCall, call({ toolName: 'delete_everything' })))).type).toBe('NOT_PINNED');
    const resolveInput = { ...call({ tenant: 'globex' }), resolution: 'applied' as const, result: { ok: true as const, output: 1, receipt: null }, reason: 'r' };
    expect(await failureOf(activityEnv().run(acts.resolveToolCall, resolveInput))).toMatchObject({ type: 'NOT_PINNED' });
    // Inside the pins the call runs; an approved intent runs the approval-required tool.
    expect(((await activityEnv().run(acts.runFencedTool, call({}))) as FencedToolResult).outcome).toMatchObject({ ok: true });
    const described = (await activityEnv().run(acts.describeToolCall, call({ callId: 'r1', toolName: 'refund', input: { amount: 5 } }))) as ToolCallDescription;
    const env = activityEnv();
    expect(
      ((await env.run(acts.runFencedTool, call({ callId: 'r1', toolName: 'refund', input: { amount: 5 }, expectedIntentDigest: described.intentDigest }))) as FencedToolResult)
        .outcome,
    ).toMatchObject({ ok: true });
    expect(executions).toEqual({ create_ticket: 1, refund: 1 });
  });

  it('runModelTurn refuses another tenant and tools outside the pin before calling the model', async () => {
    let calls = 0;
    const model: ModelAdapter = { name: 'scripted', turn: async () => ((calls += 1), { stopReason: 'end_turn', text: 'ok', toolCalls: [] }) };
    const { runModelTurn } = createModelActivities({ adapters: { scripted: model }, pinnedTenants: ['acme'], pinnedTools: ['create_ticket', 'refund'] });
    const turn = (overrides: Partial<ModelTurnInput>): ModelTurnInput => ({
      tenant: 'acme',
      model: 'scripted',
      turn: 0,
      messages: [{ role: 'user', text: 'hi' }],
      tools: ['create_ticket'],
      ...overrides,
    });
    expect(await failureOf(runModelTurn(turn({ tenant: 'globex' })))).toMatchObject({ type: 'NOT_PINNED', nonRetryable: true });
    expect(await failureOf(runModelTurn(turn({ tenant: undefined })))).toMatchObject({ type: 'NOT_PINNED' });
    expect(await failureOf(runModelTurn(turn({ tools: ['create_ticket', 'delete_everything'] })))).toMatchObject({ type: 'NOT_PINNED' });
    expect(await failureOf(runModelTurn(turn({ model: 'anthropic' })))).toMatchObject({ type: 'UNKNOWN_MODEL' });
    expect(calls).toBe(0);
    expect(await runModelTurn(turn({}))).toMatchObject({ stopReason: 'end_turn' });
    expect(calls).toBe(1);
  });

  it('pins naming tools the worker does not register are refused when the activities are built', () => {
    expect(() => createToolActivities({ store, tools: countingTools({}), pinnedTools: ['nope'] })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => createToolActivities({ store, tools: countingTools({}), pinnedTools: ['create_ticket'], requireApproval: ['refund'] })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => createToolActivities({ store, tools: countingTools({}), pinnedTenants: [] })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('TTC_TENANTS, TTC_TOOLS and TTC_REQUIRE_APPROVAL configure the worker pins', () => {
    const config = resolveConfig({}, { TTC_TENANTS: 'acme, globex', TTC_TOOLS: 'create_ticket,refund', TTC_REQUIRE_APPROVAL: 'refund' });
    expect(workerPins(config)).toEqual({ pinnedTenants: ['acme', 'globex'], pinnedTools: ['create_ticket', 'refund'], requireApproval: ['refund'] });
    expect(workerPins(resolveConfig({}, {}))).toEqual({});
    expect(() => resolveConfig({}, { TTC_TOOLS: 'create_ticket', TTC_REQUIRE_APPROVAL: 'refund' })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/^INVALID_CONFIG: TTC_REQUIRE_APPROVAL names refund/) }),
    );
    expect(() => resolveConfig({}, { TTC_TENANTS: 'a b' })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/TTC_TENANTS entry 1/) }));
    expect(() => resolveConfig({}, { TTC_TOOLS: 'x,x' })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/TTC_TOOLS lists "x" twice/) }));
  });
});

describe('a pinned worker refuses workflow input outside its pins, end to end', () => {
  let env: LocalTestEnv;
  let dir: string;
  let storeUrl: string;
  let store: CheckpointStore;
  let bundle: WorkflowBundleWithSourceMap;
  let worker: Worker;
  let running: Promise<void>;
  const executions: Record<string, number> = {};
  let modelCalls = 0;
  let seq = 0;
  const TASK_QUEUE = 'trust-pins';

  /** The model: `modelOptions.script[turn]`, then the end. */
  const model: ModelAdapter = {
    name: 'scripted',
    async turn(input) {
      modelCalls += 1;
      const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
      return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    },
  };
  const refundTurn: ModelTurnResult = { stopReason: 'tool_use', text: 'refunding', toolCalls: [{ callId: 'r1', toolName: 'refund', input: { amount: 5 } }] };
  const input = (overrides: Partial<AgentWorkflowInput>): AgentWorkflowInput => ({
    tenant: 'acme',
    model: 'scripted',
    modelOptions: { script: [refundTurn] } as never,
    prompt: 'refund it',
    tools: ['create_ticket', 'refund'],
    budget: { maxTurns: 3, maxToolCalls: 3, deadlineMs: 300_000 },
    activityOptions: { retry: { initialIntervalMs: 100, maximumAttempts: 3 } },
    ...overrides,
  });
  const start = (overrides: Partial<AgentWorkflowInput>) =>
    env.client.workflow.start(agentWorkflow, { taskQueue: TASK_QUEUE, workflowId: `trust-${++seq}-${Date.now()}`, args: [input(overrides)] });
  const stored = async (): Promise<number> => (await store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 1_000 })).length;

  const cli = (...args: string[]): Promise<CliOutput> =>
    runCli(args, {
      ...process.env,
      TEMPORAL_ADDRESS: env.devServer.address,
      TEMPORAL_NAMESPACE: env.devServer.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      TTC_STORE_URL: storeUrl,
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-trust-'));
    storeUrl = `sqlite:${join(dir, 'checkpoints.db')}`;
    [env, bundle, store] = await Promise.all([
      createLocalEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
      openCheckpointStore(storeUrl),
    ]);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowBundle: bundle,
      activities: {
        ...createToolActivities({ store, tools: countingTools(executions), ...PINS }),
        ...createModelActivities({ adapters: { scripted: model }, store, pinnedTenants: PINS.pinnedTenants, pinnedTools: PINS.pinnedTools }),
      },
    });
    running = worker.run();
  });

  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running?.catch(() => undefined);
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    for (const k of Object.keys(executions)) delete executions[k];
    modelCalls = 0;
  });

  async function failureType(handle: { result(): Promise<unknown> }): Promise<string | undefined> {
    const error = await handle.result().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    let cause: unknown = (error as WorkflowFailedError).cause;
    while (cause !== undefined && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
    return (cause as ApplicationFailure | undefined)?.type ?? undefined;
  }

  it('a workflow input naming another tenant fails with NOT_PINNED before the model or any tool runs', async () => {
    const handle = await start({ tenant: 'globex' });
    expect(await failureType(handle)).toBe('NOT_PINNED');
    expect(modelCalls).toBe(0);
    expect(executions).toEqual({});
    expect(await stored()).toBe(0);
  });

  it('a workflow input offering a tool outside the pin fails with NOT_PINNED before the model or any tool runs', async () => {
    const handle = await start({
      tools: ['create_ticket', 'refund', 'delete_everything'],
      modelOptions: { script: [{ stopReason: 'tool_use', text: 'x', toolCalls: [{ callId: 'd1', toolName: 'delete_everything', input: {} }] }] } as never,
    });
    expect(await failureType(handle)).toBe('NOT_PINNED');
    expect(modelCalls).toBe(0);
    expect(executions).toEqual({});
    expect(await stored()).toBe(0);
  });

  it('skipping approval for a tool the worker pins as approval-required is refused with APPROVAL_REQUIRED; the tool never runs', async () => {
    const handle = await start({}); // no approvalRequired in the input
    const result = await handle.result();
    const refund = result.calls.find((c) => c.callId === 'r1')!;
    expect(refund.status).toBe('failed');
    expect(refund.errorType).toBe('APPROVAL_REQUIRED');
    expect(executions).toEqual({});
    expect(await stored()).toBe(0);
  });

  it('with the approval the input asks for, the pinned tool runs once a person approves; pending, show and resolve show and filter by tenant', async () => {
    const handle = await start({ approvalRequired: { refund: { expiresAfterMs: 120_000 } } });
    let status: RunStatusView;
    const until = Date.now() + 30_000;
    do {
      await new Promise((r) => setTimeout(r, 200));
      status = await handle.query(runStatusQuery);
    } while (status.phase !== 'awaiting-approval' && Date.now() < until);
    expect(status.tenant).toBe('acme');

    const pending = await cli('pending');
    expect(pending.code).toBe(0);
    expect(pending.stdout).toMatch(/^from\s+tenant\s+status/m);
    expect(pending.stdout).toMatch(new RegExp(`temporal\\s+acme\\s+awaiting-approval\\s+${handle.workflowId}/r1`));
    const otherTenant = await cli('pending', '--tenant', 'globex');
    expect(otherTenant.stdout).not.toContain(handle.workflowId);
    const show = await cli('show', handle.workflowId, '--tenant', 'acme');
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`run ${handle.workflowId} (tenant acme)`);
    const wrongShow = await cli('show', handle.workflowId, '--tenant', 'globex');
    expect(wrongShow.code).toBe(1);
    expect(wrongShow.stderr).toMatch(/INVALID_ARGUMENT: run .* is tenant "acme"'s, not "globex"'s; nothing was done/);
    const wrongResolve = await cli('resolve', handle.workflowId, 'r1', '--abandon', '--reason', 'x', '--tenant', 'globex');
    expect(wrongResolve.code).toBe(1);
    expect(wrongResolve.stderr).toMatch(/not "globex"'s/);

    const pendingCall = status.pendingCalls.find((c) => c.callId === 'r1')!;
    await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: pendingCall.intentDigest!, stateVersion: status.stateVersion }] });
    const result = await handle.result();
    expect(result.calls.find((c) => c.callId === 'r1')).toMatchObject({ status: 'completed' });
    expect(executions).toEqual({ refund: 1 });
  });
});
