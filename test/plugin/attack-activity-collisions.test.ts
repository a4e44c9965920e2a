/**
 * Adversarial: one activity type per tool must not replace a worker's own activity of
 * the same name. `SimplePlugin` merges its activities over the worker's, silently; the plugin
 * refuses the clash when it configures the worker (as `Worker.create({ plugins })` does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import { ToolCheckpointPlugin } from '../../src/plugin';

describe('activity names the plugin registers', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-names-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tool = defineTool({ name: 'send_email', revision: 'v1', input: z.object({ to: z.string() }), execute: async () => ({ output: 'sent by the tool' }) });

  it("refuses a tool named like one of the worker's own activities instead of replacing it", () => {
    const plugin = new ToolCheckpointPlugin({ store, tools: [tool] });
    const usersOwn = async (): Promise<string> => 'sent by the user';
    expect(() => plugin.configureWorker({ taskQueue: 'q', activities: { send_email: usersOwn, other: async () => 1 } } as WorkerOptions)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"send_email"') }),
    );
  });

  it('accepts its own activities when applied twice (worker and connection), and other names', () => {
    const plugin = new ToolCheckpointPlugin({ store, tools: [tool] });
    const once = plugin.configureWorker({ taskQueue: 'q', activities: { other: async () => 1 } } as WorkerOptions);
    const twice = plugin.configureWorker(once);
    expect(Object.keys(twice.activities ?? {}).sort()).toEqual(['other', 'send_email']);
  });
});
