// The sandbox guard: the workflow bundle must build, so a transitive import of Node-only code
// (node:crypto through checkpoint/digest or codec, a driver, the root barrel) fails CI here
// with the bundler's HINT message.
import { bundleWorkflowCode } from '@temporalio/worker';

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

describe('workflow bundle (src/workflows)', () => {
  jest.setTimeout(120_000);
  it('bundles the agent workflow for the sandbox without Node-only modules', async () => {
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../src/workflows'),
      logger: quietLogger,
    });
    expect(typeof bundle.code).toBe('string');
    expect(bundle.code).toContain('agentWorkflow');
    expect(bundle.code).not.toMatch(/require\(["']node:crypto["']\)/);
  });

  it("bundles the workflow-safe entry (src/workflow.ts) with the plugin's workflow interceptors: everything workflow code may import", async () => {
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../src/workflow'),
      workflowInterceptorModules: [require.resolve('../src/workflows/fenced/workflow-interceptors')],
      logger: quietLogger,
    });
    expect(bundle.code).toContain('withApprovedIntent');
    expect(bundle.code).not.toMatch(/require\(["']node:crypto["']\)/);
  });

  it('exports agentWorkflow and its message definitions only', () => {
    const mod = require('../src/workflows') as Record<string, unknown>;
    expect(Object.keys(mod).sort()).toEqual(
      ['MESSAGE_ERROR_TYPES', 'agentWorkflow', 'approveCallUpdate', 'cancelRunSignal', 'rejectCallUpdate', 'resolveOutcomeUpdate', 'runStatusQuery'].sort(),
    );
  });
});
