/**
 * Approvals of the plugin's own `defineTool` tools (real dev server, real SQLite store): a user's
 * workflow calls a tool inside `withApprovedIntent`; the approval rides in the `_ttc-call`
 * header, and the fence merges it into the tool's `FencedToolInput`, so the tool runs only when
 * its intent digest is the approved one and the approval has not expired. A call whose input
 * carries another approval than the header is refused (APPROVAL_MISMATCH): nothing runs,
 * nothing is written.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import type { FencedToolInput } from '../../src/activities/contract/contract';
import { intentDigest } from '../../src/checkpoint/digest';
import { ToolCheckpointPlugin } from '../../src/plugin';
import type { ApprovedIntent } from '../../src/workflow';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { approvedToolWorkflow } from './plugin-errors-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

/** The intent digest of a `create_ticket` call (revision v1, no target) with this title: what `describeToolCall` shows a person. */
function ticketDigest(title: string): string {
  return intentDigest({ toolName: 'create_ticket', toolRevision: 'v1', args: { title }, target: null });
}

const IN_AN_HOUR = (): string => new Date(Date.now() + 3_600_000).toISOString();

describe('withApprovedIntent around a call of a plugin tool', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-tool-approval-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs `approvedToolWorkflow('create_ticket', input, approval)` on a fresh worker whose plugin
   * registers the tool. @returns the result or the failure type, and the tool's executions.
   */
  async function run(workflowId: string, input: Omit<FencedToolInput, 'toolName'>, approval: ApprovedIntent, requireApproval?: string[]) {
    const executed: string[] = [];
    const createTicket = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string() }).strict(),
      async execute(args) {
        executed.push(args.title);
        return { output: { ticketId: `T-${args.title}` } };
      },
    });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: workflowId,
      workflowsPath: require.resolve('./plugin-errors-workflows'),
      plugins: [new ToolCheckpointPlugin({ store, tools: [createTicket], ...(requireApproval ? { requireApproval } : {}) })],
    });
    const outcome = await worker.runUntil(
      env.client.workflow.execute(approvedToolWorkflow, { workflowId, taskQueue: workflowId, args: ['create_ticket', input, approval] }).then(
        (result) => ({ result, failureType: null }),
        (error: unknown) => ({ result: null, failureType: failureTypeOf(error) }),
      ),
    );
    const description = await env.client.workflow.getHandle(workflowId).describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    const checkpoint = await store.getByCall('default/acme', callBindingId({ runChainId, workflowId, callId: input.callId }));
    return { ...outcome, executed, checkpoint };
  }

  function failureTypeOf(error: unknown): string | null | undefined {
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (error as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    const cause = (activityFailure as ActivityFailure).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    return (cause as ApplicationFailure).type;
  }

  it('runs a call whose arguments are the approved ones once (and satisfies the worker pin requireApproval)', async () => {
    const outcome = await run(
      'tool-approval-ok',
      { tenant: 'acme', callId: 'call-1', input: { title: 'printer' } },
      { intentDigest: ticketDigest('printer'), expiresAt: IN_AN_HOUR() },
      ['create_ticket'],
    );
    expect(outcome.failureType).toBeNull();
    expect(outcome.executed).toEqual(['printer']);
    expect(outcome.result).toMatchObject({
      toolName: 'create_ticket',
      source: 'executed',
      intentDigest: ticketDigest('printer'),
      outcome: { ok: true, output: { ticketId: 'T-printer' } },
    });
    expect(outcome.checkpoint?.status).toBe('delivered');
  });

  it('refuses a call whose arguments differ from the approved ones (APPROVAL_MISMATCH): the tool does not run, nothing is written', async () => {
    const outcome = await run(
      'tool-approval-other-args',
      { tenant: 'acme', callId: 'call-1', input: { title: 'scanner' } },
      { intentDigest: ticketDigest('printer'), expiresAt: IN_AN_HOUR() },
    );
    expect(outcome.failureType).toBe('APPROVAL_MISMATCH');
    expect(outcome.executed).toEqual([]);
    expect(outcome.checkpoint).toBeNull();
  });

  it('refuses a call whose input carries another approval than withApprovedIntent (APPROVAL_MISMATCH): the tool does not run, nothing is written', async () => {
    // The input's own digest matches its arguments; the scope approved other arguments.
    const outcome = await run(
      'tool-approval-two-approvals',
      { tenant: 'acme', callId: 'call-1', input: { title: 'scanner' }, expectedIntentDigest: ticketDigest('scanner') },
      { intentDigest: ticketDigest('printer') },
    );
    expect(outcome.failureType).toBe('APPROVAL_MISMATCH');
    expect(outcome.executed).toEqual([]);
    expect(outcome.checkpoint).toBeNull();
  });

  it('refuses a call whose approval has expired (APPROVAL_EXPIRED): the tool does not run, no claim', async () => {
    const outcome = await run(
      'tool-approval-expired',
      { tenant: 'acme', callId: 'call-1', input: { title: 'printer' } },
      { intentDigest: ticketDigest('printer'), expiresAt: '2020-01-01T00:00:00.000Z' },
    );
    expect(outcome.failureType).toBe('APPROVAL_EXPIRED');
    expect(outcome.executed).toEqual([]);
    expect(outcome.checkpoint?.execution ?? null).toBeNull();
  });
});
