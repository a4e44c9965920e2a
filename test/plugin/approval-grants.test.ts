/**
 * Signed approval grants through the plugin (real dev server, real SQLite store,
 * docs/protocol.md#approval-grants). A user's workflow describes a fenced call for a grant
 * (`grantRequestDescriber`), a person's approve path signs it, and the workflow runs the call
 * under `withApprovalGrant`: the call header carries the grant and no digest; a worker holding the
 * key runs the call once, and refuses a grant made by workflow code, one of another run, an
 * expired one, or none, before any claim: the activity never runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { CALL_HEADER, ToolCheckpointPlugin } from '../../src/plugin';
import { signFencedCallApproval } from '../../src/operator';
import { signApprovalGrant } from '../../src/checkpoint/approval-grant';
import { callBindingId } from '../../src/protocol';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { approveChargeUpdate, approvedCheckoutWorkflow, chargeGrantRequestQuery, grantChargeUpdate, grantedCheckoutWorkflow, pendingChargeQuery } from './approval-workflows';
import type { FencedCallDescription } from '../../src/workflow';
import { paymentActivities, readLedger } from './payment-activities';
import { releaseReplayHooks } from '../helpers/replay-hooks';

afterEach(releaseReplayHooks);
installQuietTemporalRuntime();
jest.setTimeout(120_000);

const SECRET = Buffer.from('4b7e19c2d05af3862e1d97c4b0a56f38e2d1c0b9a8f7e6d5c4b3a29180f7e6d5', 'hex');
const KEY = { keyId: 'ops', hmacSecret: SECRET };
const HOUR = 3_600_000;

describe('signed approval grants through ToolCheckpointPlugin', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-grant-plugin-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const plugin = () => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, requireApproval: ['chargeCard'], approvalGrantKeys: [KEY] });

  /**
   * Runs the grant workflow on a fresh worker (no workflow cache). `approve` turns the request the
   * workflow shows into the grant sent (null: the workflow forges its own).
   */
  /** A fresh worker on task queue `taskQueue` (no workflow cache: the header must come from workflow state), counting charges. */
  async function chargingWorker(taskQueue: string) {
    const ledger = join(dir, `${taskQueue}.jsonl`);
    let calls = 0;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./approval-workflows'),
      maxCachedWorkflows: 0,
      activities: {
        chargeCard: async (customer: string, amountCents: number) => {
          calls += 1;
          return paymentActivities(ledger).chargeCard(customer, amountCents);
        },
      },
      plugins: [plugin()],
    });
    return { worker, calls: () => calls, effects: () => readLedger(ledger) };
  }

  /** Runs the grant workflow; `approve` turns the description the workflow shows into the grant sent (null: the workflow forges its own). */
  async function runGranted(workflowId: string, approve: ((shown: FencedCallDescription) => string) | null) {
    const { worker, calls, effects } = await chargingWorker(workflowId);
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(grantedCheckoutWorkflow, { workflowId, taskQueue: workflowId, args: ['cus_7', 9_900, 'refund-approval', approve === null] });
      if (approve !== null) {
        let shown: FencedCallDescription | null = null;
        while (shown === null) {
          shown = await handle.query(chargeGrantRequestQuery);
          if (shown === null) await new Promise((r) => setTimeout(r, 100));
        }
        await handle.executeUpdate(grantChargeUpdate, { args: [approve(shown)] });
      }
      return handle.result();
    });
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const headers = (history.events ?? []).flatMap((e) => {
      const payload = e.activityTaskScheduledEventAttributes?.header?.fields?.[CALL_HEADER];
      return payload ? [defaultPayloadConverter.fromPayload(payload) as Record<string, unknown>] : [];
    });
    return { result, calls: calls(), effects: effects(), headers };
  }

  /** What an approve path does: signs the description as shown (the digest recomputed from its arguments). */
  const sign = (shown: FencedCallDescription) =>
    signFencedCallApproval(shown, { approver: 'bob@ops', key: KEY, run: { namespace: 'default', workflowId: shown.approvalRequest!.workflowId } });
  let firstGrant: string | undefined;

  it('runs the call once under a grant signed for it; the header carries the grant under the named call id, never a digest', async () => {
    const { result, calls, effects, headers } = await runGranted('grant-ok', (shown) => (firstGrant = sign(shown)));
    expect(result).toEqual({ charge: { chargeId: effects[0]!.id }, failureType: null });
    expect([calls, effects.length]).toEqual([1, 1]);
    expect(headers).toEqual([
      { callId: 'act-1', runChainId: expect.any(String) },
      { callId: 'refund-approval', runChainId: expect.any(String), occurrence: { scope: expect.any(String), index: 0 }, approvalGrant: firstGrant },
    ]);
    expect(JSON.stringify(headers)).not.toMatch(/sha256:/);
    const description = await env.client.workflow.getHandle('grant-ok').describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    const record = await store.getByCall('default/default', callBindingId({ runChainId, workflowId: 'grant-ok', callId: 'refund-approval' }));
    expect(record?.status).toBe('delivered');
  });

  it('refuses a grant of another run (replayed), one made by workflow code, and an expired one: nothing runs, nothing is claimed', async () => {
    expect(firstGrant).toBeDefined();
    const replayed = await runGranted('grant-replayed', () => firstGrant!);
    const forged = await runGranted('grant-forged', null);
    // Signed two hours ago for one hour (what a delayed or replayed update would carry).
    const expired = await runGranted('grant-expired', (shown) =>
      signApprovalGrant(shown.approvalRequest!, { approver: 'bob@ops', expiresAt: new Date(Date.now() - HOUR).toISOString() }, KEY, new Date(Date.now() - 2 * HOUR)),
    );
    expect([replayed, forged, expired].map((r) => [r.result.failureType, r.calls, r.effects.length])).toEqual([
      ['APPROVAL_MISMATCH', 0, 0],
      ['APPROVAL_MISMATCH', 0, 0],
      ['APPROVAL_EXPIRED', 0, 0],
    ]);
    for (const workflowId of ['grant-replayed', 'grant-forged', 'grant-expired']) {
      const description = await env.client.workflow.getHandle(workflowId).describe();
      const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
      expect(await store.getByCall('default/default', callBindingId({ runChainId, workflowId, callId: 'refund-approval' }))).toBeNull();
    }
  });

  it('refuses a call approved only by a digest (withApprovedIntent) on a worker that holds grant keys: APPROVAL_REQUIRED, nothing runs', async () => {
    const { worker, calls, effects } = await chargingWorker('grant-digest-only');
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(approvedCheckoutWorkflow, { workflowId: 'grant-digest-only', taskQueue: 'grant-digest-only', args: ['cus_8', 500] });
      let shown: FencedCallDescription | null = null;
      while (shown === null) {
        shown = await handle.query(pendingChargeQuery);
        if (shown === null) await new Promise((r) => setTimeout(r, 100));
      }
      await handle.executeUpdate(approveChargeUpdate, { args: [{ intentDigest: shown.intentDigest }] });
      return handle.result();
    });
    expect([result.failureType, calls(), effects().length]).toEqual(['APPROVAL_REQUIRED', 0, 0]);
  });

  it('replays the granted run with the plugin without nondeterminism', async () => {
    const history = await env.client.workflow.getHandle('grant-ok').fetchHistory();
    await expect(Worker.runReplayHistory({ workflowsPath: require.resolve('./approval-workflows'), plugins: [plugin()] }, history, 'grant-ok')).resolves.toBeUndefined();
  });
});
