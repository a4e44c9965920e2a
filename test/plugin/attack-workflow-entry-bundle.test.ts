/**
 * Adversarial: the package's workflow-safe entry (`temporal-tool-checkpoint/workflow`,
 * src/workflow.ts) and the plugin's workflow interceptor module bundle for the sandbox, as a user's
 * prebuilt bundle made with `bundleWorkflowCode({ plugins })` would: a Node-only import anywhere
 * under them fails here with the bundler's message.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import type { CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

it('the workflow entry bundles with the plugin (its interceptor module included), without Node-only modules', async () => {
  const stub = { createIfAbsent: async () => undefined } as unknown as CheckpointStore;
  const plugin = new ToolCheckpointPlugin({ store: stub, fence: { chargeCard: { revision: 'v1' } } });
  const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflow'), plugins: [plugin], logger: quietLogger });
  expect(bundle.code).toContain('agentWorkflow');
  expect(bundle.code).toContain('_ttc-call');
  expect(bundle.code).not.toMatch(/require\(["'](node:)?(crypto|fs|async_hooks|net|child_process)["']\)/);
});
