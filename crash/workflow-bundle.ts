/**
 * One workflow bundle for every worker of a crash suite, built once at the start from the
 * current `src/workflows` (so it can never be stale) and handed to the workers through
 * TTC_WORKFLOW_BUNDLE: each of the suite's hundreds of worker starts then skips webpack
 * (about 2 s of CPU each).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

/** Bundles the agent workflow into `<dir>/workflow-bundle.js` and returns the file. */
export async function buildWorkflowBundle(dir: string): Promise<string> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../src/workflows'), logger: quiet });
  const file = join(dir, 'workflow-bundle.js');
  writeFileSync(file, code);
  return file;
}
