/**
 * Records histories of THIS release's `agentWorkflow` for the replay gate ("Deploys
 * while runs wait"): `npm run record:histories [-- --server dev|time-skipping] [--out DIR]`.
 *
 * Each shape runs the real workflow bundle (src/workflows) on a real server with stub activities
 * (a scripted model per workflow id, tool stubs; no store: replay needs only workflow code),
 * drives it through approvals, pauses, continue-as-new, … as people would, asserts it really
 * reached that state, and writes every run's history as proto3 JSON (the form `temporal workflow
 * show --output json` writes and test/fixtures/histories/load-history.ts reads) to
 * `<out>/<version>-<shape>.json` (a continue-as-new chain: `<version>-<shape>.run-<n>.json`, one
 * file per run). It then replays each written file against the same bundle and updates this
 * release's section of `<out>/README.md` (what each shape is, the commit, the bundle's digest).
 *
 * test/integration/history-replay.test.ts replays every file there against the current code, so
 * a workflow change that breaks replay of a run still waiting for a person fails CI. Re-record at
 * each release and commit the files; keep those of every release whose runs may still be open.
 *
 * Default server: `temporal server start-dev` (in memory, with the run search attributes
 * registered), the history a production server writes. `--server time-skipping` uses the Java
 * test server instead (it has no search attributes: the search-attributes shape needs the dev
 * server). `--only <shape,…>` records just those shapes and replaces only their files and README
 * rows (each row then names its own commit and bundle digest), so adding a shape does not
 * re-record the release's earlier files. Exit code 0 when every shape was recorded and replays, 1
 * otherwise.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolCallDescription } from '../src/activities/contract/contract';
import { toolCallActivities } from '../src/activities/agent/tool-call-activities';
import type { ModelTurnInput, ModelTurnResult } from '../src/model/types';
import { agentWorkflow, approveCallUpdate, cancelRunSignal, rejectCallUpdate, resolveOutcomeUpdate } from '../src/workflows';
import { RUN_SEARCH_ATTRIBUTES_PATCH } from '../src/workflows/agent/run-search-attributes';
import { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from '../src/workflows/agent/search-attributes';
import type { ToolActivities } from '../src/workflows/agent/activity-types';
import type { AgentWorkflowInput, AgentWorkflowResult } from '../src/workflows/agent/types';
import { historyToJson, loadHistory } from '../test/fixtures/histories/load-history';
import { call, deferred, digestOf, endTurn, okResult, outcomeUnknown, toolTurn, waitForStatus } from '../test/helpers/agent-fakes';
import { conversationFake } from '../test/helpers/conversation-fake';
import { createLocalEnv, createTimeSkippingEnv, installQuietTemporalRuntime } from '../test/helpers/temporal';

type History = temporal.api.history.v1.IHistory;
type Event = temporal.api.history.v1.IHistoryEvent;
type Handle = WorkflowHandle<typeof agentWorkflow>;

const ROOT = path.resolve(__dirname, '..');
const TASK_QUEUE = 'record-histories';
const TOOLS = ['create_ticket', 'send_email', 'refund', 'lookup'] as const;
const PATCH = {
  longRuns: 'ttc-long-runs',
  toolTypes: 'ttc-tool-activity-types',
  approvalArguments: 'ttc-approval-shows-validated-arguments',
  searchAttributes: RUN_SEARCH_ATTRIBUTES_PATCH,
} as const;
/** The sources agentWorkflow's bundle is built from (src/workflows and what it may import). */
const WORKFLOW_SOURCES = ['src/workflows', 'src/activities/contract/contract.ts', 'src/activities/contract/error-classes.ts', 'src/checkpoint', 'src/model/types.ts'];
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

// ---- stubs ---------------------------------------------------------------------------------

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function baseInput(overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  return {
    tenant: 'acme',
    model: 'scripted',
    prompt: 'Please handle ticket 42.',
    tools: [...TOOLS],
    budget: { maxTurns: 10, maxToolCalls: 20, deadlineMs: 30 * 24 * 3_600_000 },
    ...overrides,
  };
}

// ---- shapes --------------------------------------------------------------------------------

/** What a shape's driver gets: the run's handle (follows the chain) and the server's clients. */
interface Drive {
  readonly handle: Handle;
  readonly env: TestWorkflowEnvironment;
}

/** One recorded shape: a run with its own workflow id, script and tool stubs, driven to its state. */
interface Shape {
  readonly name: string;
  readonly workflowId: string;
  /** One line for the README. */
  readonly about: string;
  readonly input: AgentWorkflowInput;
  /** The model's answer per turn (0-based, counted across a continue-as-new chain). */
  readonly script: readonly ModelTurnResult[];
  /** A tool call's behaviour: throw, or return a result (undefined = ok). */
  readonly tool?: (input: FencedToolInput) => Promise<FencedToolResult | undefined>;
  /** Whether describeToolCall reports the validated arguments (a worker from before the approver saw validated arguments does not). */
  readonly describeWithoutArguments?: boolean;
  /** Start the run with `TtcNeedsPerson = false, TtcWaitingCalls = []`, as `startAgentRun` does on a namespace with them registered. */
  readonly searchAttributes?: boolean;
  /** People's part; returns the run's result. */
  drive(d: Drive): Promise<AgentWorkflowResult>;
  /** Asserts the result and every run's history really show the shape. */
  check(result: AgentWorkflowResult, runs: readonly History[], model: ModelLog): void;
}

/** The conversations the stub model saw, per workflow id. */
type ModelLog = ReadonlyMap<string, ModelTurnInput[]>;

const shapes: Shape[] = [];

// (a) approvals
shapes.push({
  name: 'approvals',
  workflowId: 'record-approvals',
  about:
    'one turn with two `refund` calls needing approval (both pending at once); a person approves r2 and rejects r1; r2 runs, the model reads the rejection; the run completes.',
  input: baseInput({ approvalRequired: { refund: { expiresAfterMs: 7 * 24 * 3_600_000 } } }),
  script: [toolTurn('Two refunds.', call('r1', 'refund', { amount: 1 }), call('r2', 'refund', { amount: 2 })), endTurn('Refunded 2, not 1.')],
  async drive({ handle }) {
    const s = await waitForStatus(handle, (st) => st.pendingCalls.filter((c) => c.status === 'awaiting-approval').length === 2);
    const r2 = s.pendingCalls.find((c) => c.callId === 'r2')!;
    await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r2', intentDigest: r2.intentDigest!, stateVersion: s.stateVersion }] });
    await handle.executeUpdate(rejectCallUpdate, { args: [{ callId: 'r1', reason: 'duplicate refund' }] });
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { r1: 'rejected', r2: 'completed' });
    expectEqual('activities', scheduledTypes(history!), ['runModelTurn', 'describeToolCall', 'describeToolCall', 'refund', 'runModelTurn']);
    expectEqual('updates accepted', count(history!, 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED'), 2);
  },
});

// (b) pause + resolve applied
shapes.push({
  name: 'pause-resolve-applied',
  workflowId: 'record-pause-applied',
  about:
    '`send_email` e1 fails OUTCOME_UNKNOWN (non-retryable) while `create_ticket` t2 of the same turn completes; the run pauses on e1; `resolveOutcome` applied stores the given result via `resolveToolCall`; the run completes.',
  input: baseInput(),
  script: [toolTurn('Emailing.', call('e1', 'send_email', { to: 'a@b.c' }), call('t2', 'create_ticket', { title: 'printer' })), endTurn('Done.')],
  async tool(input) {
    if (input.callId === 'e1') throw outcomeUnknown();
    return undefined;
  },
  async drive({ handle }) {
    const paused = await waitForStatus(handle, (s) => s.phase === 'paused' && s.paused?.callId === 'e1');
    const resolved = await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [{ callId: 'e1', pauseId: paused.paused!.pauseId, resolution: 'applied', result: { messageId: 'm-77' }, receipt: { messageId: 'm-77' }, reason: 'seen in the outbox' }],
    });
    expectEqual('resolution', resolved.status, 'resolved-applied');
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { e1: 'resolved-applied', t2: 'completed' });
    expectEqual('activities', scheduledTypes(history!), ['runModelTurn', 'send_email', 'create_ticket', 'resolveToolCall', 'runModelTurn']);
    expectEqual('e1 failed once', count(history!, 'EVENT_TYPE_ACTIVITY_TASK_FAILED'), 1);
  },
});

// (c) pause + resolve absent
shapes.push({
  name: 'pause-resolve-absent',
  workflowId: 'record-pause-absent',
  about: 'as pause-resolve-applied, but the person proves the email absent: the call reruns as `e1~retry1` (completes), the model reads its result under e1; the run completes.',
  input: baseInput(),
  script: [toolTurn('Emailing.', call('e1', 'send_email', { to: 'a@b.c' }), call('t2', 'create_ticket', { title: 'printer' })), endTurn('Done.')],
  async tool(input) {
    if (input.callId === 'e1') throw outcomeUnknown();
    return undefined;
  },
  async drive({ handle }) {
    const paused = await waitForStatus(handle, (s) => s.phase === 'paused' && s.paused?.callId === 'e1');
    const resolved = await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [{ callId: 'e1', pauseId: paused.paused!.pauseId, resolution: 'absent', reason: 'not in the provider log' }],
    });
    expectEqual('retry call id', resolved.retryCallId, 'e1~retry1');
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { e1: 'resolved-absent', 'e1~retry1': 'completed', t2: 'completed' });
    expectEqual('activities', scheduledTypes(history!), ['runModelTurn', 'send_email', 'create_ticket', 'send_email', 'runModelTurn']);
  },
});

// (d) continue-as-new, with an approval decided in a continued run
const CAN_AFTER_EVENTS = 20;
shapes.push({
  name: 'continue-as-new',
  workflowId: 'record-continue-as-new',
  about: `\`limits.continueAsNewAfterEvents: ${CAN_AFTER_EVENTS}\`: one \`lookup\` per turn, the run continues as new between turns; in a continued run the model asks for a \`refund\` needing approval, a person approves it (update sent to the workflow id, so to the newest run), later turns go on; the last run completes. One file per run of the chain.`,
  input: baseInput({ approvalRequired: { refund: { expiresAfterMs: 7 * 24 * 3_600_000 } }, limits: { continueAsNewAfterEvents: CAN_AFTER_EVENTS } }),
  script: [
    toolTurn('Look 0.', call('l0', 'lookup', { q: 0 })),
    toolTurn('Look 1.', call('l1', 'lookup', { q: 1 })),
    toolTurn('Refund.', call('r2', 'refund', { amount: 2 })),
    toolTurn('Look 3.', call('l3', 'lookup', { q: 3 })),
    endTurn('All done.'),
  ],
  async drive({ handle, env }) {
    const s = await waitForStatus(handle, (st) => st.phase === 'awaiting-approval', 60_000);
    if ((s.continuations ?? 0) < 1) throw new Error(`the approval is pending in the first run of the chain (continuations ${s.continuations}); raise the turns before it`);
    const r2 = s.pendingCalls.find((c) => c.callId === 'r2')!;
    await env.client.workflow
      .getHandle<typeof agentWorkflow>(handle.workflowId)
      .executeUpdate(approveCallUpdate, { args: [{ callId: 'r2', intentDigest: r2.intentDigest!, stateVersion: s.stateVersion }] });
    return handle.result();
  },
  check(result, runs) {
    expectEqual('status', result.status, 'completed');
    if (runs.length < 3) throw new Error(`the chain has ${runs.length} runs, expected at least 3 (two continue-as-new)`);
    const approvalRun = runs.findIndex((h) => count(h, 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED') > 0);
    if (approvalRun < 1) throw new Error(`the approval was decided in run ${approvalRun + 1} of the chain, expected a continued run`);
    runs.forEach((h, i) => {
      const last = i === runs.length - 1;
      expectEqual(`run ${i + 1} ends`, typeName(lastEvent(h)), last ? 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED' : 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    });
    expectEqual('result counts continuations', result.continued?.continuations, runs.length - 1);
  },
});

// (e) three concurrent calls finishing out of order
const gates = { c: deferred(), b: deferred() };
shapes.push({
  name: 'concurrent-out-of-order',
  workflowId: 'record-concurrent',
  about:
    'one turn of three `lookup` calls a, b, c run concurrently (default `toolConcurrency`: the whole turn), scheduled in one workflow task; they finish c, b, a; the model reads the results in its order a, b, c; the run completes.',
  input: baseInput(),
  script: [toolTurn('Three lookups.', call('a', 'lookup', { q: 'a' }), call('b', 'lookup', { q: 'b' }), call('c', 'lookup', { q: 'c' })), endTurn('Looked up.')],
  async tool(input) {
    if (input.callId === 'b') {
      await gates.c.promise;
      await sleep(400);
    }
    if (input.callId === 'a') {
      await gates.b.promise;
      await sleep(400);
    }
    setImmediate(() => (input.callId === 'c' ? gates.c.resolve() : input.callId === 'b' ? gates.b.resolve() : undefined));
    return undefined;
  },
  async drive({ handle }) {
    return handle.result();
  },
  check(result, [history], model) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { a: 'completed', b: 'completed', c: 'completed' });
    const scheduled = scheduledCalls(history!);
    const events = history!.events ?? [];
    const firstCompleted = events.findIndex(
      (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && scheduled.get(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId))?.toolName === 'lookup',
    );
    const lookupsScheduled = events.flatMap((e, i) => (e.activityTaskScheduledEventAttributes?.activityType?.name === 'lookup' ? [i] : []));
    if (lookupsScheduled.length !== 3 || lookupsScheduled.some((i) => i > firstCompleted)) throw new Error('the three lookups were not all scheduled before the first finished');
    expectEqual(
      'completion order',
      completedCallIds(history!).filter((id) => ['a', 'b', 'c'].includes(id)),
      ['c', 'b', 'a'],
    );
    const second = model.get('record-concurrent')?.[1];
    const toolMessages = (second?.messages ?? []).flatMap((m) => (m.role === 'tool' ? [m.callId] : []));
    expectEqual('results in the model order', toolMessages, ['a', 'b', 'c']);
  },
});

// (f) cancel while a call awaits approval
shapes.push({
  name: 'cancel-awaiting-approval',
  workflowId: 'record-cancel-awaiting-approval',
  about: 'one turn: `lookup` l1 completes while `refund` r1 awaits approval; a person sends `cancelRun`; the run ends cancelled with r1 not run.',
  input: baseInput({ approvalRequired: { refund: { expiresAfterMs: 7 * 24 * 3_600_000 } } }),
  script: [toolTurn('Look and refund.', call('l1', 'lookup', { q: 1 }), call('r1', 'refund', { amount: 5 }))],
  async drive({ handle }) {
    await waitForStatus(handle, (s) => s.phase === 'awaiting-approval' && s.calls.some((c) => c.callId === 'l1' && c.status === 'completed'));
    await handle.signal(cancelRunSignal, { reason: 'customer hung up' });
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'cancelled');
    expectEqual('calls', statuses(result), { l1: 'completed', r1: 'not-run' });
    expectEqual('signals', count(history!, 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'), 1);
  },
});

// (g) the third patch: a worker that does not report validated arguments
shapes.push({
  name: 'approval-without-arguments',
  workflowId: 'record-approval-without-arguments',
  about:
    '`describeToolCall` answers without `arguments` (a worker from before the approver saw validated arguments, during a deploy): the `refund` call needing approval is refused INVALID_ARGUMENT, nothing runs (patch `ttc-approval-shows-validated-arguments`); the run completes.',
  input: baseInput({ approvalRequired: { refund: { expiresAfterMs: 7 * 24 * 3_600_000 } } }),
  script: [toolTurn('Refund.', call('r1', 'refund', { amount: 9 })), endTurn('Could not refund.')],
  describeWithoutArguments: true,
  async drive({ handle }) {
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { r1: 'failed' });
    expectEqual('error type', result.calls[0]?.errorType, 'INVALID_ARGUMENT');
    if (!patchIds(history!).includes(PATCH.approvalArguments)) throw new Error(`no ${PATCH.approvalArguments} marker`);
  },
});

// (h) the run search attributes, upserted as calls wait and are decided
shapes.push({
  name: 'search-attributes',
  workflowId: 'record-search-attributes',
  about:
    'started with `TtcNeedsPerson = false` (as `startAgentRun` does on a namespace with the run search attributes): `refund` r1 awaits approval (upsert true/[r1]), is approved (false/[]) and runs; `send_email` e1 fails OUTCOME_UNKNOWN and the run pauses (true/[e1]); resolved applied (false/[]); the run completes. Patch `ttc-run-search-attributes` before the first upsert.',
  input: baseInput({ approvalRequired: { refund: { expiresAfterMs: 7 * 24 * 3_600_000 } } }),
  script: [toolTurn('Refund.', call('r1', 'refund', { amount: 3 })), toolTurn('Emailing.', call('e1', 'send_email', { to: 'a@b.c' })), endTurn('Refunded and emailed.')],
  searchAttributes: true,
  async tool(input) {
    if (input.callId === 'e1') throw outcomeUnknown();
    return undefined;
  },
  async drive({ handle }) {
    const s = await waitForStatus(handle, (st) => st.phase === 'awaiting-approval');
    const r1 = s.pendingCalls.find((c) => c.callId === 'r1')!;
    await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: r1.intentDigest!, stateVersion: s.stateVersion }] });
    const paused = await waitForStatus(handle, (st) => st.phase === 'paused' && st.paused?.callId === 'e1');
    await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [{ callId: 'e1', pauseId: paused.paused!.pauseId, resolution: 'applied', result: { messageId: 'm-9' }, reason: 'seen in the outbox' }],
    });
    return handle.result();
  },
  check(result, [history]) {
    expectEqual('status', result.status, 'completed');
    expectEqual('calls', statuses(result), { r1: 'completed', e1: 'resolved-applied' });
    expectEqual('upserts', searchAttributeUpserts(history!), [
      [true, ['r1']],
      [false, []],
      [true, ['e1']],
      [false, []],
    ]);
    if (!patchIds(history!).includes(PATCH.searchAttributes)) throw new Error(`no ${PATCH.searchAttributes} marker`);
  },
});

// ---- history reading -----------------------------------------------------------------------

type EventTypeName = keyof typeof temporal.api.enums.v1.EventType;
const EventType = temporal.api.enums.v1.EventType;

function count(history: History, type: EventTypeName): number {
  return (history.events ?? []).filter((e) => e.eventType === EventType[type]).length;
}
function typeName(event: Event): string {
  return EventType[event.eventType ?? 0] ?? String(event.eventType);
}
function lastEvent(history: History): Event {
  const events = history.events ?? [];
  return events[events.length - 1]!;
}
function scheduledTypes(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}
function payloadJson(payload: temporal.api.common.v1.IPayload | undefined): unknown {
  return payload?.data ? JSON.parse(Buffer.from(payload.data).toString('utf8')) : undefined;
}
/** Scheduled event id → the tool call it ran (json/plain inputs: the recorder sets no codec). */
function scheduledCalls(history: History): Map<number, { toolName: string; callId: string }> {
  const out = new Map<number, { toolName: string; callId: string }>();
  for (const e of history.events ?? []) {
    const attrs = e.activityTaskScheduledEventAttributes;
    if (!attrs) continue;
    const input = payloadJson(attrs.input?.payloads?.[0]) as { callId?: string } | undefined;
    out.set(Number(e.eventId), { toolName: attrs.activityType?.name ?? '', callId: input?.callId ?? '' });
  }
  return out;
}
function completedCallIds(history: History): string[] {
  const scheduled = scheduledCalls(history);
  return (history.events ?? []).flatMap((e) => {
    const id = e.activityTaskCompletedEventAttributes?.scheduledEventId;
    return id == null ? [] : [scheduled.get(Number(id))?.callId ?? ''];
  });
}
function patchIds(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName !== 'core_patch') return [];
    return (m.details?.['patch-data']?.payloads ?? []).map((p) => (payloadJson(p) as { id: string }).id);
  });
}
/** `[TtcNeedsPerson, TtcWaitingCalls]` of each upsert that sets them (sdk-core upserts TemporalChangeVersion per patch on its own). */
function searchAttributeUpserts(history: History): [unknown, unknown][] {
  return (history.events ?? []).flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields || !(TTC_NEEDS_PERSON.name in fields)) return [];
    return [[payloadJson(fields[TTC_NEEDS_PERSON.name] ?? undefined), payloadJson(fields[TTC_WAITING_CALLS.name] ?? undefined)] as [unknown, unknown]];
  });
}
function statuses(result: AgentWorkflowResult): Record<string, string> {
  return Object.fromEntries(result.calls.map((c) => [c.callId, c.status]));
}
function expectEqual(what: string, actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Every run of the chain that starts at `firstRunId`, in order, following each run's ContinuedAsNew event. */
async function chainHistories(env: TestWorkflowEnvironment, workflowId: string, firstRunId: string): Promise<{ runId: string; history: History }[]> {
  const runs: { runId: string; history: History }[] = [];
  let runId: string | undefined = firstRunId;
  while (runId !== undefined) {
    const history: History = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    if (started?.firstExecutionRunId !== firstRunId) throw new Error(`run ${runId} names first run ${started?.firstExecutionRunId}, not ${firstRunId}`);
    runs.push({ runId, history });
    runId = lastEvent(history).workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

// ---- main ----------------------------------------------------------------------------------

function parseArgs(argv: readonly string[]): { server: 'dev' | 'time-skipping'; out: string; only: readonly Shape[] | null } {
  let server: 'dev' | 'time-skipping' = 'dev';
  let out = path.join(ROOT, 'test/fixtures/histories');
  let only: Shape[] | null = null;
  const usage = (why: string): never => {
    console.error(`${why}\nusage: npm run record:histories [-- --server dev|time-skipping] [--out DIR] [--only SHAPE,…] (shapes: ${shapes.map((s) => s.name).join(', ')})`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[++i];
    if (flag === '--server' && (value === 'dev' || value === 'time-skipping')) server = value;
    else if (flag === '--out' && value !== undefined) out = path.resolve(value);
    else if (flag === '--only' && value !== undefined) {
      only = value.split(',').map((name) => shapes.find((s) => s.name === name.trim()) ?? usage(`no shape named ${JSON.stringify(name)}`));
    } else usage(`unknown argument ${JSON.stringify(flag)}`);
  }
  return { server, out, only };
}

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
}

interface Recorded {
  readonly shape: Shape;
  readonly files: { readonly file: string; readonly history: History; readonly events: number }[];
}

async function main(): Promise<void> {
  const { server, out, only } = parseArgs(process.argv.slice(2));
  const recording = only ?? shapes;
  // ERROR: the workflow's own WARN logs (a refused call in approval-without-arguments) are expected here.
  installQuietTemporalRuntime('ERROR');
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const commit = git('rev-parse', 'HEAD');
  // What the workflow bundle is built from (its sandbox imports); the bundle digest below pins it exactly.
  const dirty = git('status', '--porcelain', '--', ...WORKFLOW_SOURCES).length > 0;

  const [env, workflowBundle] = await Promise.all([
    server === 'dev' ? createLocalEnv() : createTimeSkippingEnv(),
    bundleWorkflowCode({ workflowsPath: require.resolve('../src/workflows'), logger: quietLogger }),
  ]);
  const bundleDigest = createHash('sha256').update(workflowBundle.code).digest('hex');
  const recorded: Recorded[] = [];
  try {
    const byId = new Map(shapes.map((s) => [s.workflowId, s]));
    const shapeOf = (): Shape => {
      const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      const shape = byId.get(workflowId);
      if (shape === undefined)
        throw ApplicationFailure.create({ type: 'NO_SHAPE', message: `no recorded shape has workflow id ${JSON.stringify(workflowId)}`, nonRetryable: true });
      return shape;
    };
    const conversation = conversationFake();
    const modelLog = new Map<string, ModelTurnInput[]>();
    const runFencedTool = async (input: FencedToolInput): Promise<FencedToolResult> => (await shapeOf().tool?.(input)) ?? okResult(input);
    const activities: ToolActivities = {
      ...toolCallActivities(TOOLS, runFencedTool),
      runFencedTool,
      async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
        const shape = shapeOf();
        const seen = modelLog.get(shape.workflowId) ?? [];
        modelLog.set(shape.workflowId, seen);
        seen[input.turn] = { ...input, messages: conversation.messagesOf(input) };
        const turn = shape.script[input.turn];
        if (turn === undefined) throw ApplicationFailure.create({ type: 'SCRIPT_EXHAUSTED', message: `${shape.name}: no scripted turn ${input.turn}`, nonRetryable: true });
        return turn;
      },
      async describeToolCall(input): Promise<ToolCallDescription> {
        const described = { toolRevision: '1', intentDigest: digestOf(input), idempotencyKey: `key-${input.callId}`, arguments: input.input, target: null };
        if (!shapeOf().describeWithoutArguments) return described;
        const { arguments: _omitted, ...older } = described;
        return older as ToolCallDescription;
      },
      async resolveToolCall(input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
        return { callId: input.callId, toolName: input.toolName, toolRevision: '1', outcome: input.result!, idempotencyKey: `key-${input.callId}`, intentDigest: digestOf(input) };
      },
    };
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: TASK_QUEUE, workflowBundle, activities });
    await worker.runUntil(async () => {
      for (const shape of recording) {
        const handle = await env.client.workflow.start(agentWorkflow, {
          taskQueue: TASK_QUEUE,
          workflowId: shape.workflowId,
          args: [shape.input],
          ...(shape.searchAttributes
            ? {
                typedSearchAttributes: [
                  { key: TTC_NEEDS_PERSON, value: false },
                  { key: TTC_WAITING_CALLS, value: [] },
                ],
              }
            : {}),
        });
        const result = await shape.drive({ handle, env });
        const runs = await chainHistories(env, shape.workflowId, handle.firstExecutionRunId);
        for (const { history } of runs) {
          if (!patchIds(history).includes(PATCH.longRuns)) throw new Error(`${shape.name}: a run has no ${PATCH.longRuns} marker`);
          if (count(history, 'EVENT_TYPE_WORKFLOW_TASK_FAILED') > 0) throw new Error(`${shape.name}: a workflow task failed while recording`);
        }
        shape.check(
          result,
          runs.map((r) => r.history),
          modelLog,
        );
        const files = runs.map(({ history }, i) => {
          const file = `${version}-${shape.name}${runs.length > 1 ? `.run-${i + 1}` : ''}.json`;
          return { file, history, events: history.events?.length ?? 0 };
        });
        recorded.push({ shape, files });
        console.log(`${shape.name}: ${result.status}, ${files.length} run(s): ${files.map((f) => `${f.file} (${f.events} events)`).join(', ')}`);
      }
    });

    // Written only once every shape was recorded and checked.
    mkdirSync(out, { recursive: true });
    for (const { shape, files } of recorded) {
      // A chain recorded with more runs before must not leave its extra runs behind.
      const stem = `${version}-${shape.name}`;
      for (const f of readdirSync(out)) if (f === `${stem}.json` || (f.startsWith(`${stem}.run-`) && f.endsWith('.json'))) rmSync(path.join(out, f));
      for (const { file, history } of files) writeFileSync(path.join(out, file), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
    }

    // What was written replays against the bundle it was recorded with (read back as the test reads it).
    for (const { files } of recorded) {
      for (const { file } of files) await Worker.runReplayHistory({ workflowBundle }, loadHistory(path.join(out, file)), file);
    }
    console.log(`replayed ${recorded.reduce((n, r) => n + r.files.length, 0)} files`);
  } finally {
    await env.teardown();
  }
  writeReadme(out, { version, commit, dirty, bundleDigest, server, recorded, partial: only !== null });
  console.log(`wrote ${path.relative(ROOT, out)}/README.md (release ${version}, commit ${commit.slice(0, 12)}${dirty ? ' + uncommitted workflow source changes' : ''})`);
}

// ---- README --------------------------------------------------------------------------------

const README_HEAD = `# Recorded workflow histories (replay gate)

\`test/integration/history-replay.test.ts\` replays every \`*.json\` here against today's
\`src/workflows\` with \`Worker.runReplayHistory\`: a workflow change that would break a run still
open on an older release (waiting for an approval or a resolution, possibly for days) fails CI
with a nondeterminism error. See docs/deploying.md.

- \`agent-workflow-run-fenced-tool.json\`: recorded by hand before patch \`ttc-tool-activity-types\` (every tool call
  scheduled as \`runFencedTool\`); replayed by test/integration/activity-types-replay.test.ts too.
- \`<version>-<shape>.json\` (\`<version>-<shape>.run-<n>.json\` for each run of a continue-as-new
  chain): written by \`npm run record:histories\` (scripts/record-histories.ts), one section per
  release below.

Re-record at each release: \`npm run record:histories\` (add \`-- --server time-skipping\` for the
Java test server instead of \`temporal server start-dev\`), commit the files and keep every
release's files until no run of that release can still be open. Each shape runs the real
workflow with stub activities (scripted model, tool stubs; no store), and the recorder asserts
the state it names was reached before writing.
`;

function writeReadme(
  out: string,
  r: { version: string; commit: string; dirty: boolean; bundleDigest: string; server: string; recorded: readonly Recorded[]; partial: boolean },
): void {
  const file = path.join(out, 'README.md');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    text = README_HEAD;
  }
  const begin = `<!-- release ${r.version} -->`;
  const end = `<!-- /release ${r.version} -->`;
  const provenance = `commit \`${r.commit}\`${r.dirty ? ` with uncommitted changes in ${WORKFLOW_SOURCES.join(', ')}` : ''} on ${r.server === 'dev' ? '`temporal server start-dev`' : 'the time-skipping test server'}; workflow bundle sha256 \`${r.bundleDigest}\``;
  const rows = r.recorded.map(({ shape, files }) => {
    const list = files.map((f) => `\`${f.file}\` (${f.events} events)`).join(', ');
    const own = r.partial ? ` (recorded on its own from ${provenance})` : '';
    return `- **${shape.name}** (workflow id \`${shape.workflowId}\`): ${shape.about} ${files.length > 1 ? `${files.length} runs: ` : ''}${list}${own}`;
  });
  const at = text.indexOf(begin);
  const stop = text.indexOf(end);
  if (r.partial && at >= 0 && stop > at) {
    // --only: replace (or add) just the recorded shapes' rows; the section keeps the others.
    const lines = text.slice(at, stop).trimEnd().split('\n');
    for (const [i, { shape }] of r.recorded.entries()) {
      const row = lines.findIndex((line) => line.startsWith(`- **${shape.name}** `));
      if (row >= 0) lines[row] = rows[i]!;
      else lines.push(rows[i]!);
    }
    writeFileSync(file, `${text.slice(0, at)}${lines.join('\n')}\n${text.slice(stop)}`);
    return;
  }
  const section = [
    begin,
    `## Release ${r.version}`,
    '',
    `Recorded from ${provenance}. Patch markers: \`${PATCH.longRuns}\` in every run, \`${PATCH.toolTypes}\` before each tool activity, \`${PATCH.approvalArguments}\` in approval-without-arguments, \`${PATCH.searchAttributes}\` in search-attributes.`,
    '',
    ...rows,
    end,
  ].join('\n');
  text = at >= 0 && stop > at ? `${text.slice(0, at)}${section}${text.slice(stop + end.length)}` : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, text);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
