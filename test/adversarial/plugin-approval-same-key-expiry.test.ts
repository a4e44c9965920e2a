/**
 * Adversarial (approvals): an approved call's expiry must hold on every path that can
 * apply the effect for the first time.
 *
 * The fence refuses a fresh claim at or after `approvalExpiresAt` (APPROVAL_EXPIRED), and after a
 * lookup proves the earlier claim's effect ABSENT it refuses to run again under the expired
 * approval ("resolve it as absent to run it again under a new approval, or abandon"). But the
 * same-key-repeat path (`dedupesByKey` within `keyRetentionMs`) takes the claim over and runs
 * the activity with no expiry check. When the earlier attempt died after its claim and BEFORE its
 * request (so nothing was applied), the repeat is the first request the provider ever sees: the
 * effect is applied after the person's approval expired.
 *
 * Here: `chargeCard` fenced with `dedupesByKey: true, keyRetentionMs: 24 h`, `callDeadlineMs: 500` (margin 100), called inside
 * `withApprovedIntent` (the call header carries the digest and an expiry 1 s ahead; injected by
 * an outer interceptor as the plugin's workflow interceptor would write it); attempt 1 claims and
 * then freezes before calling the activity; attempt 2 runs 2 s later, after the expiry.
 *
 * Real SQLite store, the real fence interceptor (MockActivityEnvironment).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { intentDigest } from '../../src/checkpoint/digest';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { withCallHeader } from '../../src/plugin/contract/call-header';
import { waitFor } from '../helpers/flaky-store';

jest.setTimeout(60_000);
const QUIET = new DefaultLogger('ERROR');

describe('approval expiry on the same-key repeat path of a fenced activity', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-approval-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an attempt after the expiry does not send the first request of the call by a same-key repeat', async () => {
    const args = ['cus_1', 5_000];
    const digest = intentDigest({ toolName: 'chargeCard', toolRevision: 'v1', args: { args }, target: null });
    const expiresAt = new Date(Date.now() + 1_000).toISOString();
    // What the plugin's workflow interceptor writes for a call inside withApprovedIntent({ intentDigest, expiresAt }).
    const header: ActivityInterceptorsFactory = () => ({
      inbound: {
        execute: (input, next) =>
          next({ ...input, headers: withCallHeader(input.headers, { callId: 'act-1', runChainId: 'run-approval', approvedIntentDigest: digest, approvalExpiresAt: expiresAt }) }),
      },
    });
    const requests: Array<{ key: string | undefined; at: number }> = [];
    const chargeCard = async (_customer: string, _amount: number): Promise<{ chargeId: string }> => {
      requests.push({ key: fencedCallContext()?.idempotencyKey, at: Date.now() });
      return { chargeId: `ch-${requests.length}` };
    };
    // A user activity's claim is repeated only after its settle time (its holder may still run): 500 ms + 100 ms margin, before attempt 2.
    const fence = { chargeCard: { revision: 'v1', dedupesByKey: true, keyRetentionMs: 86_400_000, callDeadlineMs: 500 } };
    const interceptorsOf = (plugin: ToolCheckpointPlugin): ActivityInterceptorsFactory[] => [
      header,
      ...(plugin.configureWorker({ taskQueue: 'approval' } as WorkerOptions).interceptors?.activity ?? []),
    ];
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId: 'wf-approval', runId: 'run-approval' } };

    // Attempt 1 (before the expiry) claims the call, then its worker freezes before the request is sent.
    const frozen = new ToolCheckpointPlugin({ store, fence, hooks: { step: (point) => (point === 'before-execute' ? new Promise<void>(() => undefined) : undefined) } });
    void new MockActivityEnvironment({ ...info, attempt: 1 }, { interceptors: interceptorsOf(frozen), logger: QUIET }).run(chargeCard, ...(args as [string, number]));
    let claimed = false;
    await waitFor(async () => {
      const [record] = await store.listByStatus(['executing'], { limit: 10 });
      claimed = record !== undefined;
      return claimed;
    });
    expect(requests).toHaveLength(0);

    // Attempt 2, after the approval expired.
    await new Promise((done) => setTimeout(done, 2_000));
    const plugin = new ToolCheckpointPlugin({ store, fence, reconcileMarginMs: 100 });
    const outcome = await new MockActivityEnvironment({ ...info, attempt: 2 }, { interceptors: interceptorsOf(plugin), logger: QUIET })
      .run(chargeCard, ...(args as [string, number]))
      .then(
        (value) => ({ value }),
        (error: Error & { type?: string }) => ({ failure: error.type }),
      );

    // No request was ever sent before the expiry: sending the first one now applies the charge without a live approval.
    expect(requests.filter((r) => r.at >= Date.parse(expiresAt))).toEqual([]);
    expect(outcome).toEqual({ failure: expect.stringMatching(/APPROVAL_EXPIRED|OUTCOME_UNKNOWN/) });
  });
});
