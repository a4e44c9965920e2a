/**
 * Adversarial: a fenced local activity whose retry backs off past `localRetryThreshold` is
 * scheduled again by the SDK under a new sequence number. Its call id must not change with it, or
 * the retry is a new call and the effect runs twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { localCheckoutWorkflow } from './attack-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

describe('a fenced local activity retried after a backoff timer', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-la-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its call id: the effect of the first attempt is found by the lookup, not applied again', async () => {
    const effects: Array<{ id: string; key: string | undefined }> = [];
    const keys: Array<string | undefined> = [];
    const chargeCard = async (customer: string): Promise<{ chargeId: string }> => {
      const key = fencedCallContext()?.idempotencyKey;
      keys.push(key);
      const id = `ch-${customer}-${effects.length + 1}`;
      effects.push({ id, key });
      if (effects.length === 1) throw new Error('connection reset after the charge was applied');
      return { chargeId: id };
    };
    const lookup = async (ctx: { idempotencyKey: string }) => {
      const found = effects.find((e) => e.key === ctx.idempotencyKey);
      return found === undefined ? { found: false as const } : { found: true as const, output: { chargeId: found.id } };
    };
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'attack-la',
      workflowsPath: require.resolve('./attack-workflows'),
      activities: { chargeCard },
      plugins: [new ToolCheckpointPlugin({ store, reconcileMarginMs: 0, fence: { chargeCard: { revision: 'v1', callDeadlineMs: 300, lookup } } })],
    });
    const result = await worker.runUntil(env.client.workflow.execute(localCheckoutWorkflow, { workflowId: 'attack-la-1', taskQueue: 'attack-la', args: ['cus_la', 500] }));
    expect(effects).toHaveLength(1);
    expect(keys).toHaveLength(1);
    expect(result).toEqual({ chargeId: effects[0]!.id });
  });
});
