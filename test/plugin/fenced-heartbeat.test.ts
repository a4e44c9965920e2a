/**
 * The plugin's heartbeat for fenced activities (docs/protocol.md#worker-plugin), on a real server:
 * a fenced activity the workflow scheduled without `heartbeatTimeout` gets the plugin's
 * `heartbeatTimeoutMs` (one scheduled with its own keeps it; an activity the plugin does not
 * fence gets none), and the fence heartbeats while the activity runs, re-sending the activity's
 * own last heartbeat details. With `heartbeatTimeoutMs: null` nothing is added.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { heartbeat } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { heartbeatDefaultsWorkflow } from './heartbeat-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);

const HEARTBEAT_TIMEOUT_MS = 2_000;
const QUIET_MS = 5_000; // the first charge sends nothing for two and a half heartbeat timeouts

describe('heartbeats of fenced activities (real server)', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-heartbeat-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the workflow on a worker with the plugin (`heartbeatTimeoutMs` as given); returns its result, the scheduled heartbeat timeouts and what `describe` showed while the first charge ran. */
  async function run(taskQueue: string, heartbeatTimeoutMs: number | null | undefined) {
    let charges = 0;
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const activities = {
      async slowCharge(customer: string) {
        charges += 1;
        heartbeat({ stage: 'sent', customer });
        if (charges === 1) {
          started();
          await released; // no heartbeat of its own meanwhile
        }
        return { chargeId: `ch-${charges}` };
      },
      async audit(customer: string) {
        return `audited ${customer}`;
      },
    };
    const plugin = new ToolCheckpointPlugin({
      store,
      ...(heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs }),
      fence: { slowCharge: { revision: 'v1', callDeadlineMs: 10_000 } },
    });
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: require.resolve('./heartbeat-workflows'), activities, plugins: [plugin] });
    const handle = await env.client.workflow.start(heartbeatDefaultsWorkflow, { workflowId: taskQueue, taskQueue, args: ['cus_hb'] });
    const outcome = worker.runUntil(
      handle.result().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
    );
    // While the first charge is quiet, past its heartbeat timeout: the details Temporal holds for it.
    await firstStarted;
    await sleep(QUIET_MS);
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    const details = pending.map((a) => (a.heartbeatDetails?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p)));
    release();
    const result = await outcome;
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a !== null && a !== undefined)
      .map((a) => [a.activityType?.name, Number(a.heartbeatTimeout?.seconds ?? 0) * 1_000 + Math.round((a.heartbeatTimeout?.nanos ?? 0) / 1e6) || null]); // 0: none
    return { result, scheduled, details };
  }

  it("a fenced activity scheduled without a heartbeat timeout gets the plugin's and is heartbeated while it runs; its own details are kept", async () => {
    const { result, scheduled, details } = await run('fenced-heartbeat-default', HEARTBEAT_TIMEOUT_MS);
    expect(result).toEqual({ value: ['ch-1', 'ch-2', 'audited cus_hb'] });
    expect(scheduled).toEqual([
      ['slowCharge', HEARTBEAT_TIMEOUT_MS],
      ['slowCharge', 45_000],
      ['audit', null],
    ]);
    expect(details).toEqual([[{ stage: 'sent', customer: 'cus_hb' }]]);
  });

  it('heartbeatTimeoutMs null: no heartbeat timeout is added', async () => {
    const { result, scheduled } = await run('fenced-heartbeat-none', null);
    expect(result).toEqual({ value: ['ch-1', 'ch-2', 'audited cus_hb'] });
    expect(scheduled).toEqual([
      ['slowCharge', null],
      ['slowCharge', 45_000],
      ['audit', null],
    ]);
  });
});
