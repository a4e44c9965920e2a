/**
 * Adversarial (results): fencing an UNMODIFIED activity must not change what the
 * workflow receives (README: "your activities, unchanged"; fence-interceptor `asSent`: "as
 * Temporal's default payload converter sends it ... which is what the workflow receives
 * unfenced"). Temporal's default payload converter sends a `Uint8Array` as `binary/plain` (the
 * workflow gets a `Uint8Array`) and `undefined` as `binary/null` (the workflow gets
 * `undefined`). The fence JSON-round-trips the result instead: the workflow gets a plain object
 * `{ "0": 137, "1": 80, ... }` for the bytes, and `null` for `void`. Unfenced (control) the
 * same workflow gets a Uint8Array and undefined.
 *
 * Real dev server, real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { resultShapes, type ShapeActivities } from './plugin-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);

const activities: ShapeActivities = {
  async thumbnail() {
    return new Uint8Array([137, 80, 78, 71]);
  },
  async deleteFile() {
    return undefined;
  },
};

describe('a fenced activity returns to the workflow what it returns unfenced', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-shapes-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(taskQueue: string, plugins: WorkerOptions['plugins']) {
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: require.resolve('./plugin-workflows'), activities, plugins });
    return worker.runUntil(env.client.workflow.execute(resultShapes, { workflowId: `${taskQueue}-1`, taskQueue, args: ['img_1'] }));
  }

  it('control: unfenced, the workflow gets a Uint8Array and undefined', async () => {
    expect(await run('adv-shapes-unfenced', [])).toEqual({ bytesIsUint8Array: true, bytesType: '[object Uint8Array]', deleteIsUndefined: true, deleteValue: 'undefined' });
  });

  it('fenced, the workflow gets the same Uint8Array and undefined', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { thumbnail: { revision: 'v1' }, deleteFile: { revision: 'v1' } } });
    expect(await run('adv-shapes-fenced', [plugin])).toEqual({ bytesIsUint8Array: true, bytesType: '[object Uint8Array]', deleteIsUndefined: true, deleteValue: 'undefined' });
  });
});
