// Replay of a history recorded before patch `ttc-tool-activity-types` (every tool call scheduled as
// `runFencedTool`) against today's agentWorkflow: a run already in flight when a worker is upgraded
// must keep replaying, so the workflow still schedules `runFencedTool` for it (`patched()`).
//
// The fixture (test/fixtures/histories/agent-workflow-run-fenced-tool.json) is `temporal workflow
// show --output json` of a real dev-server run of the code before that patch: a model turn asking for
// create_ticket and send_email (send_email needs approval: describeToolCall, approveCall), both
// tool calls as runFencedTool, then a final model turn.
import path from 'node:path';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { loadHistory } from '../fixtures/histories/load-history';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

installQuietTemporalRuntime();

const FIXTURE = path.join(__dirname, '../fixtures/histories/agent-workflow-run-fenced-tool.json');
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger });
}, 120_000);

function scheduledTypes(history: ReturnType<typeof loadHistory>): string[] {
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

describe('agentWorkflow replays histories recorded before each tool became its own activity type', () => {
  it('replays a run whose tool calls were scheduled as runFencedTool', async () => {
    const history = loadHistory(FIXTURE);
    expect(scheduledTypes(history)).toEqual(['runModelTurn', 'describeToolCall', 'runFencedTool', 'runFencedTool', 'runModelTurn']);
    await expect(Worker.runReplayHistory({ workflowBundle }, history, 'agent-before-tool-activity-types')).resolves.toBeUndefined();
  });
});
