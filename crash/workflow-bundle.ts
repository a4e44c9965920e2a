/**
 * One workflow bundle for every worker of a crash suite, built once at the start from the
 * current `src/workflows` (so it can never be stale) and handed to the workers through
 * TTC_WORKFLOW_BUNDLE: each of the suite's hundreds of worker starts then skips webpack
 * (about 2 s of CPU each). With TTC_PAYLOAD_CODEC_KEY set the workers use the payload codec, so
 * the bundle carries its failure converter (a worker with the codec refuses a bundle without it).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { codecFromEnv } from '../src/codec/codec-config';
import { buildAgentWorkflowBundle } from '../src/codec/workflow-bundle';

/** Bundles the agent workflow into `<dir>/workflow-bundle.js` and returns the file. */
export async function buildWorkflowBundle(dir: string): Promise<string> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const code = await buildAgentWorkflowBundle({ encodeFailures: codecFromEnv(process.env) !== null, logger: quiet });
  const file = join(dir, 'workflow-bundle.js');
  writeFileSync(file, code);
  return file;
}
