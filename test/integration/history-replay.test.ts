// The replay gate ("Deploys while runs wait"; docs/deploying.md): every history under
// test/fixtures/histories/ (recorded from earlier releases by `npm run record:histories`, plus the
// one recorded by hand before patch `ttc-tool-activity-types`) replays against today's src/workflows without a nondeterminism
// error. A workflow change that would break a run still open on an older release (waiting days for
// an approval or a resolution) fails here; such a change belongs behind `patched()`.
//
// The gate is shown to bite twice: a fixture whose history is edited in memory (an activity type
// renamed), and a copy of the workflow code with one command changed without `patched()` (every
// tool call scheduled as `runFencedTool` again), both fail with DeterminismViolationError.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { loadHistory } from '../fixtures/histories/load-history';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

// sdk-core logs the nondeterminism the last tests provoke on purpose at WARN: keep it to errors.
if (Runtime._instance === undefined) Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });

const ROOT = path.join(__dirname, '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/histories');
const FILES = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
/** The agent's own activity types; any other scheduled type is a tool's own activity. */
const AGENT_ACTIVITIES = new Set(['runModelTurn', 'runFencedTool', 'describeToolCall', 'resolveToolCall']);
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

type History = ReturnType<typeof loadHistory>;

function scheduledTypes(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger });
}, 120_000);

describe('agentWorkflow replays every recorded history (test/fixtures/histories)', () => {
  it('has recorded histories of this release: approvals, pause + resolve, continue-as-new chains', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(8);
    expect(FILES.some((f) => /-approvals\.json$/.test(f))).toBe(true);
    expect(FILES.some((f) => /-pause-resolve-applied\.json$/.test(f))).toBe(true);
    expect(FILES.some((f) => /-pause-resolve-absent\.json$/.test(f))).toBe(true);
    expect(FILES.filter((f) => /-continue-as-new\.run-\d+\.json$/.test(f)).length).toBeGreaterThanOrEqual(3);
  });

  it.each(FILES)('%s replays without a nondeterminism error', async (file) => {
    const history = loadHistory(path.join(FIXTURES, file));
    expect(history.events?.length).toBeGreaterThan(0);
    await expect(Worker.runReplayHistory({ workflowBundle }, history, file)).resolves.toBeUndefined();
  });
});

describe('the replay gate detects a mismatch', () => {
  it('a history whose first model turn was scheduled under another activity type fails with DeterminismViolationError', async () => {
    const file = FILES.find((f) => /-approvals\.json$/.test(f))!;
    const history = loadHistory(path.join(FIXTURES, file));
    const event = history.events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runModelTurn')!;
    event.activityTaskScheduledEventAttributes!.activityType!.name = 'runModelTurnV2';
    await expect(Worker.runReplayHistory({ workflowBundle }, history, file)).rejects.toBeInstanceOf(DeterminismViolationError);
  });

  it('workflow code that changes the command sequence without patched() fails every history that ran a tool under its own type', async () => {
    // A copy of src/ where the per-tool activity type is no longer behind patched(): tool calls
    // are scheduled as runFencedTool, as before patch `ttc-tool-activity-types`.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ttc-altered-workflow-'));
    try {
      cpSync(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
      const file = path.join(dir, 'src/workflows/agent/agent-run-tool-calls.ts');
      const original = readFileSync(file, 'utf8');
      const needle = 'const ownType = patched(TOOL_ACTIVITY_TYPES_PATCH);';
      // If this fails, the workflow changed: pick another command-changing edit for this test.
      expect(original).toContain(needle);
      writeFileSync(file, original.replace(needle, 'const ownType = false;'));
      const altered = await bundleWorkflowCode({
        workflowsPath: path.join(dir, 'src/workflows'),
        logger: quietLogger,
        // The copy lives outside the repository: resolve packages from the repository's node_modules.
        webpackConfigHook: (config) => ({ ...config, resolve: { ...config.resolve, modules: [path.join(ROOT, 'node_modules'), 'node_modules'] } }),
      });

      const histories = FILES.map((f) => ({ file: f, history: loadHistory(path.join(FIXTURES, f)) }));
      const withOwnTypes = histories.filter(({ history }) => scheduledTypes(history).some((t) => !AGENT_ACTIVITIES.has(t)));
      const withoutOwnTypes = histories.filter((h) => !withOwnTypes.includes(h));
      expect(withOwnTypes.length).toBeGreaterThanOrEqual(6);

      const results = new Map<string, unknown>();
      for await (const r of Worker.runReplayHistories(
        { workflowBundle: altered },
        histories.map(({ file: workflowId, history }) => ({ workflowId, history })),
      )) {
        results.set(r.workflowId, r.error);
      }
      for (const { file: f } of withOwnTypes) expect([f, results.get(f)]).toEqual([f, expect.any(DeterminismViolationError)]);
      // Histories that never scheduled a tool under its own type (before patch `ttc-tool-activity-types`, refused calls) still replay.
      for (const { file: f } of withoutOwnTypes) expect([f, results.get(f)]).toEqual([f, undefined]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
