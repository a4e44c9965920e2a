/**
 * Worker pins and the plugin's `fence` entries (src/plugin/fence-pins.ts). A fenced
 * activity is registered by the worker and kept under the plugin's tenant, so the pins are
 * checked when the plugin is built: an unpinned fence entry or tenant is refused there, and a
 * pinned fence entry is fenced as usual next to the pinned tools.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import { fencedCallContext, ToolCheckpointPlugin } from '../../src/plugin';
import type { ToolCheckpointPluginOptions } from '../../src/plugin';

const INFO = { activityType: 'chargeCard', activityId: '3', workflowExecution: { workflowId: 'wf-pins', runId: 'run-pins' } };
const tool = (name: string) => defineTool({ name, revision: 'v1', input: z.object({}).strict(), execute: async () => ({ output: null }) });

describe('worker pins and fenced activities', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-fence-pins-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const build = (options: Omit<ToolCheckpointPluginOptions, 'store'>) => () => new ToolCheckpointPlugin({ store, ...options });
  const refusal = (field: string) => expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field }) });

  it('pinnedTools must pin every fence entry: an unpinned one is refused when the plugin is built', () => {
    expect(build({ fence: { chargeCard: { revision: 'v1' }, refund: { revision: 'v1' } }, pinnedTools: ['chargeCard'] })).toThrow(refusal('pinnedTools'));
    expect(build({ fence: { chargeCard: { revision: 'v1' } }, tools: [tool('create_ticket')], pinnedTools: ['create_ticket'] })).toThrow(
      /does not pin the fenced activity types chargeCard/,
    );
  });

  it('pinnedTools that pins only fence entries while the plugin has tools is refused (its tools could never run)', () => {
    expect(build({ fence: { chargeCard: { revision: 'v1' } }, tools: [tool('create_ticket')], pinnedTools: ['chargeCard'] })).toThrow(refusal('pinnedTools'));
  });

  it("pinnedTenants must name the plugin's tenant", () => {
    expect(build({ fence: { chargeCard: { revision: 'v1' } }, pinnedTenants: ['acme'] })).toThrow(refusal('tenant'));
    expect(build({ fence: { chargeCard: { revision: 'v1' } }, pinnedTenants: ['acme'], tenant: 'acme' })).not.toThrow();
  });

  it('pinned fence entries and pinned tools together: the plugin builds, registers the pinned tools and fences the activity', async () => {
    const plugin = new ToolCheckpointPlugin({
      store,
      tenant: 'acme',
      pinnedTenants: ['acme'],
      fence: { chargeCard: { revision: 'v1' } },
      tools: [tool('create_ticket'), tool('send_email')],
      pinnedTools: ['chargeCard', 'create_ticket'],
    });
    const options = plugin.configureWorker({ taskQueue: 'pins' } as WorkerOptions);
    expect(Object.keys(options.activities ?? {})).toEqual(expect.arrayContaining(['create_ticket', 'send_email']));
    let runs = 0;
    const charge = async () => {
      runs += 1;
      return { tenantKey: fencedCallContext()?.idempotencyKey ?? null };
    };
    const env = () => new MockActivityEnvironment(INFO, { interceptors: options.interceptors?.activity ?? [] });
    const first = (await env().run(charge)) as { tenantKey: string | null };
    expect(first.tenantKey).toMatch(/^ttc/);
    expect(await env().run(charge)).toEqual(first);
    expect(runs).toBe(1);
  });
});
