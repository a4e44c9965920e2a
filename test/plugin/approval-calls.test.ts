/**
 * Approved calls through the plugin (real dev server, real SQLite store). A user's own
 * workflow describes a fenced call (the plugin's `describeFencedCall` activity), waits for a
 * person's approval through an update, and runs the call under `withApprovedIntent`: the
 * workflow interceptor puts the approved digest and expiry in the call header, and the fence
 * refuses a call whose intent differs (APPROVAL_MISMATCH) or whose approval has expired
 * (APPROVAL_EXPIRED) before any claim: the activity never runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { CALL_HEADER, ToolCheckpointPlugin } from '../../src/plugin';
import type { ApprovedIntent, FencedCallDescription } from '../../src/workflow';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { checkoutWorkflow } from './workflows';
import { approveChargeUpdate, approvedCheckoutWorkflow, pendingChargeQuery, type ApprovedCheckoutResult } from './approval-workflows';
import { paymentActivities, readLedger } from './payment-activities';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const OTHER_DIGEST = `sha256:${'0'.repeat(64)}`;

describe('approved calls through ToolCheckpointPlugin', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-approval-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  function plugin(requireApproval?: string[]): ToolCheckpointPlugin {
    return new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, ...(requireApproval ? { requireApproval } : {}) });
  }

  /**
   * Runs the approval workflow on a fresh worker (no workflow cache: every activation replays
   * from history, so the header must come from workflow state). `approve` turns the description
   * the workflow shows into the approval a person sends.
   */
  async function runApproved(workflowId: string, approve: (d: FencedCallDescription) => ApprovedIntent, requireApproval?: string[]) {
    const ledger = join(dir, `${workflowId}.jsonl`);
    const { chargeCard } = paymentActivities(ledger);
    let calls = 0;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: workflowId,
      workflowsPath: require.resolve('./approval-workflows'),
      maxCachedWorkflows: 0,
      activities: {
        chargeCard: async (customer: string, amountCents: number) => {
          calls += 1;
          return chargeCard(customer, amountCents);
        },
      },
      plugins: [plugin(requireApproval)],
    });
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(approvedCheckoutWorkflow, { workflowId, taskQueue: workflowId, args: ['cus_9', 4_200] });
      let shown: FencedCallDescription | null = null;
      while (shown === null) {
        shown = await handle.query(pendingChargeQuery);
        if (shown === null) await new Promise((r) => setTimeout(r, 100));
      }
      await handle.executeUpdate(approveChargeUpdate, { args: [approve(shown)] });
      return (await handle.result()) as ApprovedCheckoutResult;
    });
    return { result, calls, effects: readLedger(ledger) };
  }

  /** The checkpoint of the workflow's n-th activity command. */
  async function checkpointOf(workflowId: string, seq: number) {
    const description = await env.client.workflow.getHandle(workflowId).describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    return store.getByCall('default/default', callBindingId({ runChainId, workflowId, callId: `act-${seq}` }));
  }

  /** The call header of each activity the workflow scheduled, by activity type. */
  async function scheduledHeaders(workflowId: string): Promise<Array<{ activityType: string; header: unknown }>> {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).flatMap((e) => {
      const attributes = e.activityTaskScheduledEventAttributes;
      if (!attributes) return [];
      const payload = attributes.header?.fields?.[CALL_HEADER];
      return [{ activityType: attributes.activityType?.name ?? '', header: payload ? defaultPayloadConverter.fromPayload(payload) : null }];
    });
  }

  it('describes the call, and runs it once under the digest a person approved (the header carries digest and expiry)', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const { result, calls, effects } = await runApproved('approval-ok', (d) => ({ intentDigest: d.intentDigest, expiresAt }));
    expect(result.description).toEqual({
      activityType: 'chargeCard',
      toolRevision: 'v1',
      intentDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      arguments: ['cus_9', 4_200],
    });
    expect(result.failureType).toBeNull();
    expect(calls).toBe(1);
    expect(effects).toHaveLength(1);
    expect(result.charge).toEqual({ chargeId: effects[0]!.id });
    const record = await checkpointOf('approval-ok', 2);
    expect(record?.status).toBe('delivered');
    expect(record?.binding.toolName).toBe('chargeCard');
    const headers = await scheduledHeaders('approval-ok');
    expect(headers).toEqual([
      { activityType: 'describeFencedCall', header: { callId: 'act-1', runChainId: expect.any(String) } },
      {
        activityType: 'chargeCard',
        header: {
          callId: 'act-2',
          runChainId: expect.any(String),
          occurrence: { scope: expect.any(String), index: 0 },
          approvedIntentDigest: result.description.intentDigest,
          approvalExpiresAt: expiresAt,
        },
      },
    ]);
  });

  it('refuses a call approved under another digest with APPROVAL_MISMATCH: nothing runs, nothing is written', async () => {
    const { result, calls, effects } = await runApproved('approval-mismatch', () => ({ intentDigest: OTHER_DIGEST }));
    expect(result.failureType).toBe('APPROVAL_MISMATCH');
    expect(calls).toBe(0);
    expect(effects).toEqual([]);
    expect(await checkpointOf('approval-mismatch', 2)).toBeNull();
  });

  it('refuses a call whose approval has expired with APPROVAL_EXPIRED: nothing runs, no claim', async () => {
    const { result, calls, effects } = await runApproved('approval-expired', (d) => ({ intentDigest: d.intentDigest, expiresAt: '2020-01-01T00:00:00.000Z' }));
    expect(result.failureType).toBe('APPROVAL_EXPIRED');
    expect(calls).toBe(0);
    expect(effects).toEqual([]);
    expect((await checkpointOf('approval-expired', 2))?.execution ?? null).toBeNull();
  });

  it('replays the approved run with the plugin without nondeterminism (the header comes from workflow state)', async () => {
    const history = await env.client.workflow.getHandle('approval-ok').fetchHistory();
    await expect(Worker.runReplayHistory({ workflowsPath: require.resolve('./approval-workflows'), plugins: [plugin()] }, history, 'approval-ok')).resolves.toBeUndefined();
  });

  it('with the worker pin requireApproval on a fenced activity, a call outside withApprovedIntent is refused with APPROVAL_REQUIRED and an approved one runs', async () => {
    const ledger = join(dir, 'approval-pin-plain.jsonl');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'approval-pin-plain',
      workflowsPath: require.resolve('./workflows'),
      activities: { chargeCard: paymentActivities(ledger).chargeCard },
      plugins: [plugin(['chargeCard'])],
    });
    const refused = await worker.runUntil(
      env.client.workflow.execute(checkoutWorkflow, { workflowId: 'approval-pin-plain', taskQueue: 'approval-pin-plain', args: ['cus_10', 500] }).then(
        () => null,
        (error: unknown) => error,
      ),
    );
    expect(refused).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (refused as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    expect((activityFailure as ActivityFailure).cause).toBeInstanceOf(ApplicationFailure);
    expect(((activityFailure as ActivityFailure).cause as ApplicationFailure).type).toBe('APPROVAL_REQUIRED');
    expect(readLedger(ledger)).toEqual([]);
    expect(await checkpointOf('approval-pin-plain', 1)).toBeNull();

    const approved = await runApproved('approval-pin-approved', (d) => ({ intentDigest: d.intentDigest }), ['chargeCard']);
    expect(approved.result.failureType).toBeNull();
    expect(approved.calls).toBe(1);
  });

  it('refuses a requireApproval name that is neither a tool nor a fenced activity', () => {
    expect(() => plugin(['refundCard'])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'requireApproval' }) }));
  });
});
