/**
 * Prebuilt workflow bundles (for the payload and failure codecs). A worker that bundles its
 * workflows at start passes its data converter's `failureConverterPath` and its plugins' workflow
 * interceptor modules to the bundler itself; a prebuilt bundle (config `worker.workflowBundle`, env
 * TTC_WORKFLOW_BUNDLE) carries only what it was built with:
 * - the failure converter: for workers with the codec it must be built with
 *   {@link ENCODED_FAILURE_CONVERTER_PATH}, or failures raised in workflow code (a failed run, a
 *   failed update) would keep their text in plaintext; the worker refuses a bundle without it
 *   ({@link assertWorkflowBundleEncodesFailures});
 * - the plugins' workflow interceptor modules: Temporal 1.24 adds a plugin's `workflowModules` to a
 *   worker only when it bundles (`workflowsPath`), so a bundle for a worker with
 *   `ToolCheckpointPlugin` must be built with the plugin, or its activities get no call header.
 * {@link buildAgentWorkflowBundle} builds one with both.
 */
import { readFileSync } from 'node:fs';
import { bundleWorkflowCode, type BundlerPlugin, type Logger } from '@temporalio/worker';
import { CheckpointError } from '../checkpoint/errors';
import { ENCODED_FAILURE_CONVERTER_PATH } from './data-converter';
import { ENCODED_FAILURE_CONVERTER_MARKER } from './failure-converter';

/** Options of {@link buildAgentWorkflowBundle}. */
export interface AgentWorkflowBundleOptions {
  /**
   * True for workers that use the payload codec (TTC_PAYLOAD_CODEC_KEY): the bundle encodes failure
   * messages and stack traces into payloads the codec encrypts. Such a bundle also runs on a worker
   * without the codec, but its workflow failures then read "Encoded failure" in the Temporal UI.
   */
  readonly encodeFailures: boolean;
  /** Logger of the bundler (webpack). @default the SDK's (console) */
  readonly logger?: Logger;
  /**
   * Plugins to bundle with, passed to `bundleWorkflowCode({ plugins })`: each plugin's
   * `configureBundler` runs, which adds its workflow interceptor modules to the bundle. Pass the
   * same plugins the worker that loads the bundle gets, `ToolCheckpointPlugin` included: Temporal
   * adds a plugin's workflow interceptor modules to a worker with a prebuilt bundle only this way.
   * Without `ToolCheckpointPlugin` here, its fence falls back to the call id
   * `activity-<activityId>` within the run (see `src/plugin/call-identity`). A plugin's
   * `configureBundler` may change any bundler option, the failure converter included;
   * `createAgentWorker` still refuses a bundle without the codec's converter when the codec is on.
   * @default none
   */
  readonly plugins?: readonly BundlerPlugin[];
}

/**
 * Bundles the agent workflow (`src/workflows`) for `TTC_WORKFLOW_BUNDLE`, with the failure
 * converter of the payload codec when `encodeFailures` is true and the workflow interceptor modules
 * of `plugins`. Write the returned code to a file.
 *
 *   const code = await buildAgentWorkflowBundle({ encodeFailures: true, plugins: [new ToolCheckpointPlugin({ store, tools })] });
 *
 * @returns the bundle's code.
 */
export async function buildAgentWorkflowBundle(options: AgentWorkflowBundleOptions): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.encodeFailures ? { failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH } : {}),
    ...(options.plugins !== undefined && options.plugins.length > 0 ? { plugins: [...options.plugins] } : {}),
  });
  return code;
}

/**
 * Checks that a prebuilt workflow bundle was built with the payload codec's failure converter
 * (`bundleWorkflowCode({ …, failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH })`), by the
 * text {@link ENCODED_FAILURE_CONVERTER_MARKER} that converter carries. Called by the worker when
 * the codec is on and the configuration names a prebuilt bundle.
 *
 * @param code the bundle's code. @default read from `codePath`
 * @throws {@link CheckpointError} INVALID_CONFIG naming TTC_WORKFLOW_BUNDLE when the bundle lacks
 *   the converter (its workflow failures would keep their text in plaintext) or cannot be read.
 */
export function assertWorkflowBundleEncodesFailures(codePath: string, code?: string): void {
  let text: string;
  try {
    text = code ?? readFileSync(codePath, 'utf8');
  } catch (error) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      `TTC_WORKFLOW_BUNDLE: cannot read the workflow bundle ${JSON.stringify(codePath)}`,
      { field: 'TTC_WORKFLOW_BUNDLE' },
      { cause: error },
    );
  }
  if (text.includes(ENCODED_FAILURE_CONVERTER_MARKER)) return;
  throw new CheckpointError(
    'INVALID_CONFIG',
    `TTC_WORKFLOW_BUNDLE: the workflow bundle ${JSON.stringify(codePath)} was built without the payload codec's failure converter, so with TTC_PAYLOAD_CODEC_KEY set its workflow failures would reach Temporal in plaintext; rebuild it with buildAgentWorkflowBundle({ encodeFailures: true }) or bundleWorkflowCode({ workflowsPath, failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH })`,
    { field: 'TTC_WORKFLOW_BUNDLE', reason: 'failure-converter-missing' },
  );
}
