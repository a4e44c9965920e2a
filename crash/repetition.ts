/**
 * One repetition of a crash scenario: its own task queue and workflow id, its worker processes
 * (an armed worker that SIGKILLs itself at a crash point, standby workers that join only once
 * their gate opens), the run, and what the harness reads back: the run's result or pause, the
 * provider's effects, the checkpoints in the store and the activity events in history.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import type { CrashPoint } from '../src/activities/fence/crash-points';
import { isToolCallActivityType, type FencedToolInput, type FencedToolResult } from '../src/activities/contract/contract';
import { callBindingId } from '../src/checkpoint/call-identity';
import type { CheckpointRecord } from '../src/checkpoint/types';
import { scriptedRunInput, startAgentRun } from '../src/client';
import { spawnWorker, type WorkerProcess } from '../src/dev/worker-process';
import type { agentWorkflow } from '../src/workflows';
import { resolveOutcomeUpdate, runStatusQuery } from '../src/workflows/agent/messages';
import type { AgentWorkflowResult, RunStatusView } from '../src/workflows/agent/types';
import type { CrashStack } from './stack';
import { transcriptFor, type ScriptedCall } from './transcripts';

const TOOLS_MODULE = resolve(__dirname, 'tools.ts');
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** A standby worker: started ahead, joins the task queue once `open()` is called. */
export interface Standby {
  open(): void;
  readonly ready: Promise<WorkerProcess>;
}

/** How the run ended up when the harness stopped waiting. */
export type RunState =
  | { readonly kind: 'finished'; readonly result: AgentWorkflowResult }
  | { readonly kind: 'paused'; readonly status: RunStatusView }
  | { readonly kind: 'timeout'; readonly reason: string };

/** Activity events of one tool call in history (times are server times, ms since the epoch). */
export interface CallEvents {
  readonly completedAt: number | null;
  readonly failedAt: number | null;
  readonly failureType: string | null;
  /** Attempt that completed or failed (from ActivityTaskStarted). */
  readonly attempt: number | null;
  /** What the completed activity returned (a `FencedToolResult`), else null. */
  readonly result: (FencedToolResult & { readonly storedUnder?: { readonly toolName: string; readonly toolRevision: string } }) | null;
}

/** One failed attempt of a tool call, as the harness saw it in `pendingActivities` (`lastFailure`). */
export interface SeenFailure {
  /** The attempt that failed. */
  readonly attempt: number;
  readonly type: string | null;
  readonly message: string;
  /** The failure's `nextRetryDelay`, ms, when it set one. */
  readonly nextRetryDelayMs: number | null;
  /** When the harness first saw it (local clock, ms since the epoch). */
  readonly seenAt: number;
}

/** Watches a run's pending tool activity: every failed attempt and the highest attempt number. */
export interface AttemptWatch {
  readonly failures: readonly SeenFailure[];
  readonly maxAttempt: number;
  /** Failure types seen, in order, without repeats. */
  types(): string[];
  stop(): Promise<void>;
}

/** Options of {@link Repetition.start}. */
export interface StartOptions {
  /** Overrides the tool calls' heartbeat timeout (2 s). */
  readonly heartbeatTimeoutMs?: number;
  /** Overrides parts of the activity retry policy (every activity of the run). */
  readonly retry?: { readonly initialIntervalMs?: number; readonly maximumIntervalMs?: number; readonly maximumAttempts?: number; readonly backoffCoefficient?: number };
  /** Tools whose calls need a person's approval, with the approval's lifetime. */
  readonly approvalRequired?: Readonly<Record<string, { readonly expiresAfterMs: number }>>;
  /** The run's compensation policy: present = the run compensates its applied effects on cancel, abandon or these result types. */
  readonly compensateOn?: readonly string[];
}

export class Repetition {
  readonly tag: string;
  readonly taskQueue: string;
  readonly workflowId: string;
  readonly lines: string[] = [];
  private readonly workers: WorkerProcess[] = [];
  private readonly pending: Array<Promise<WorkerProcess | null>> = [];
  private readonly closers: Array<() => Promise<unknown>> = [];
  private broken: string | null = null;
  private cleaningUp = false;
  private readonly dir: string;
  private seq = 0;
  /** The run chain of the run (its first execution's run id), once started. */
  runChainId: string | null = null;

  constructor(
    readonly stack: CrashStack,
    readonly scenarioId: string,
    readonly index: number,
  ) {
    const id = randomBytes(3).toString('hex');
    this.tag = `${stack.kind.slice(0, 2)}${index}${id}`;
    this.taskQueue = `crash-${stack.kind}-${scenarioId}-${index}-${id}`;
    this.workflowId = `crash-${stack.kind}-${scenarioId}-${index}-${id}`;
    this.dir = join(stack.workDir, 'runs', this.taskQueue);
    mkdirSync(this.dir, { recursive: true });
  }

  /** A scratch folder of this repetition. */
  path(name: string): string {
    return join(this.dir, name);
  }

  /** Starts a worker (armed when `crashAt` is given) and waits until it polls. */
  async worker(options: { crashAt?: { point: CrashPoint; toolName?: string; occurrence?: number }; env?: Record<string, string> } = {}): Promise<WorkerProcess> {
    const identity = `${this.tag}-w${++this.seq}${options.crashAt ? '-armed' : ''}`;
    const worker = await spawnWorker({
      env: { ...this.stack.workerEnv(this.taskQueue), ...options.env },
      identity,
      crashAt: options.crashAt,
      toolsModule: TOOLS_MODULE,
      onLine: (line) => this.lines.push(`${identity}: ${line}`),
      readyTimeoutMs: 120_000,
    });
    this.workers.push(worker);
    return worker;
  }

  /** Starts a standby worker now (armed when `crashAt` is given); it connects and polls only after `open()`. */
  standby(options: { crashAt?: { point: CrashPoint; toolName?: string; occurrence?: number }; env?: Record<string, string> } = {}): Standby {
    const gate = this.path(`gate-${++this.seq}`);
    const identity = `${this.tag}-w${this.seq}-standby${options.crashAt ? '-armed' : ''}`;
    const ready = spawnWorker({
      env: { ...this.stack.workerEnv(this.taskQueue), ...options.env, TTC_CRASH_GATE: gate },
      identity,
      crashAt: options.crashAt,
      toolsModule: TOOLS_MODULE,
      onLine: (line) => this.lines.push(`${identity}: ${line}`),
      readyTimeoutMs: 600_000,
    }).then((w) => {
      this.workers.push(w);
      return w;
    });
    this.pending.push(
      ready.catch((error: Error) => {
        if (!this.cleaningUp) this.broken = `standby worker ${identity} failed to start: ${error.message}`;
        return null;
      }),
    );
    return { open: () => writeFileSync(gate, ''), ready };
  }

  /** Starts the run: one model turn asking for `calls`, then the model stops. */
  async start(calls: readonly ScriptedCall[], options: StartOptions = {}): Promise<WorkflowHandle<typeof agentWorkflow>> {
    const config = this.stack.config(this.taskQueue);
    const input = scriptedRunInput(config, transcriptFor(this.tag, calls), {
      prompt: `crash harness ${this.scenarioId} #${this.index}`,
      // The windows are defined in call order ("kill after the effects of the first two"): one call
      // at a time, as before patch `ttc-long-runs` made a turn's calls run concurrently by default.
      toolConcurrency: 1,
      ...(options.approvalRequired ? { approvalRequired: options.approvalRequired } : {}),
      ...(options.compensateOn ? { compensateOn: options.compensateOn } : {}),
    });
    const activityOptions = {
      ...input.activityOptions,
      ...(options.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs: options.heartbeatTimeoutMs }),
      ...(options.retry === undefined ? {} : { retry: { ...input.activityOptions?.retry, ...options.retry } }),
    };
    const handle = await startAgentRun(this.stack.client, config, { ...input, activityOptions }, this.workflowId);
    this.runChainId = (handle as { firstExecutionRunId?: string }).firstExecutionRunId ?? null;
    return handle;
  }

  /**
   * Watches the run's pending tool activity (polling `describe`) until `stop()`: every failed
   * attempt (its `lastFailure`) and the highest attempt. Failures of attempts that fail for good
   * are in history instead (see {@link callEvents}).
   */
  watchAttempts(handle: WorkflowHandle<typeof agentWorkflow>, intervalMs = 150): AttemptWatch {
    const failures: SeenFailure[] = [];
    let maxAttempt = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        const pending = (await handle.describe().catch(() => null))?.raw.pendingActivities ?? [];
        for (const activity of pending) {
          if (!isToolCallActivityType(activity.activityType?.name)) continue;
          const attempt = activity.attempt ?? 0;
          maxAttempt = Math.max(maxAttempt, attempt);
          const failure = activity.lastFailure;
          if (!failure || attempt < 2 || failures.some((f) => f.attempt === attempt - 1)) continue;
          const info = failure.applicationFailureInfo ?? failure.cause?.applicationFailureInfo;
          const delay = info?.nextRetryDelay;
          failures.push({
            attempt: attempt - 1,
            type: info?.type ?? (failure.timeoutFailureInfo ? 'TIMEOUT' : null),
            message: failure.message ?? '',
            nextRetryDelayMs: delay == null ? null : tsToMs(delay),
            seenAt: Date.now(),
          });
        }
        await sleep(intervalMs);
      }
    })();
    return {
      failures,
      get maxAttempt() {
        return maxAttempt;
      },
      types: () => [...new Set(failures.map((f) => f.type ?? 'none'))],
      stop: async () => {
        running = false;
        await loop;
      },
    };
  }

  /**
   * Tells Temporal that the workflow's sticky worker is gone (`ResetStickyTaskQueue`), so its
   * next workflow task goes to the task queue at once instead of waiting out the sticky
   * schedule-to-start timeout (10 s) on the dead worker's queue. Only the harness's speed
   * depends on it: recovery is measured to the interrupted call's completion, before that task.
   */
  async forgetStickyWorker(): Promise<void> {
    await this.stack.client.workflowService.resetStickyTaskQueue({ namespace: this.stack.server().namespace, execution: { workflowId: this.workflowId } }).catch(() => undefined);
  }

  /** Waits until the run finishes or pauses (or `timeoutMs` passes). */
  async settle(handle: WorkflowHandle<typeof agentWorkflow>, timeoutMs = 120_000): Promise<RunState> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.broken !== null) return { kind: 'timeout', reason: this.broken };
      try {
        const description = await handle.describe();
        if (description.status.name !== 'RUNNING') return { kind: 'finished', result: await handle.result() };
        const status = await handle.query(runStatusQuery);
        if (status.phase === 'paused' && status.paused !== null) return { kind: 'paused', status };
      } catch {
        // The server or every worker may be down for a moment: keep asking.
      }
      await sleep(200);
    }
    return { kind: 'timeout', reason: `still running after ${timeoutMs} ms` };
  }

  /**
   * Plays the operator for a run paused on a send_email: checks the provider's outbox for the
   * email and resolves the call as applied (with the message id found) or as absent.
   */
  async resolveAsOperator(handle: WorkflowHandle<typeof agentWorkflow>, status: RunStatusView): Promise<'applied' | 'absent'> {
    const paused = status.paused!;
    // What the model asked to send, as the pending call shows it (`modelInput`; the view has no
    // `input` field since it shows validated arguments).
    const input = status.pendingCalls.find((c) => c.callId === paused.callId)?.modelInput as { to?: string; subject?: string } | undefined;
    const sent = (await this.stack.provider.client.listEmails()).find((e) => e.to === input?.to && e.subject === input?.subject);
    await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [
        sent
          ? {
              callId: paused.callId,
              pauseId: paused.pauseId,
              resolution: 'applied',
              result: { messageId: sent.messageId },
              receipt: { messageId: sent.messageId, sentAt: sent.sentAt },
              reason: 'crash harness operator: found in the provider outbox',
            }
          : { callId: paused.callId, pauseId: paused.pauseId, resolution: 'absent', reason: 'crash harness operator: not in the provider outbox' },
      ],
    });
    return sent ? 'applied' : 'absent';
  }

  /** How many times the provider applied each call's effect (tickets by title, emails by subject). */
  async effectCounts(calls: readonly ScriptedCall[]): Promise<number[]> {
    const [tickets, emails] = await Promise.all([this.stack.provider.client.listTickets(), this.stack.provider.client.listEmails()]);
    return calls.map((call) =>
      call.name === 'send_email' ? emails.filter((e) => e.subject === call.input.subject).length : tickets.filter((t) => t.title === call.input.title).length,
    );
  }

  /** Where the worker checkpoints a call of this run (tenant `demo`): namespace and binding call id. */
  address(callId: string): { namespace: string; callId: string } {
    if (this.runChainId === null) throw new Error('the run has not started: no run chain yet');
    return { namespace: `${this.stack.server().namespace}/demo`, callId: callBindingId({ runChainId: this.runChainId, workflowId: this.workflowId, callId }) };
  }

  /** The checkpoint of a call (found by call, whatever tool revision or input it was made under), or null. */
  record(call: ScriptedCall, callId: string = call.id): Promise<CheckpointRecord | null> {
    const { namespace, callId: bindingCallId } = this.address(callId);
    return this.stack.inspector.getByCall(namespace, bindingCallId);
  }

  /** Polls the checkpoint of `call` until `predicate` holds. */
  async waitForRecord(call: ScriptedCall, predicate: (record: CheckpointRecord) => boolean, timeoutMs = 60_000): Promise<CheckpointRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const record = await this.record(call).catch(() => null);
      if (record !== null && predicate(record)) return record;
      if (Date.now() > deadline) throw new Error(`checkpoint of ${call.id} did not reach the expected state within ${timeoutMs} ms (last: ${record?.status ?? 'none'})`);
      await sleep(25);
    }
  }

  /** Activity events of each fenced call in history, by the call id the activity ran under. */
  async callEvents(handle: WorkflowHandle<typeof agentWorkflow>): Promise<Map<string, CallEvents>> {
    const history = await handle.fetchHistory();
    const scheduled = new Map<string, string>(); // scheduledEventId → callId
    const started = new Map<string, number>(); // scheduledEventId → attempt
    const events = new Map<string, CallEvents>();
    for (const event of history.events ?? []) {
      const id = String(event.eventId);
      const at = tsToMs(event.eventTime);
      const s = event.activityTaskScheduledEventAttributes;
      if (s && isToolCallActivityType(s.activityType?.name)) {
        const data = s.input?.payloads?.[0]?.data;
        if (data) scheduled.set(id, (JSON.parse(Buffer.from(data).toString('utf8')) as Pick<FencedToolInput, 'callId'>).callId);
      }
      const st = event.activityTaskStartedEventAttributes;
      if (st) started.set(String(st.scheduledEventId), st.attempt ?? 0);
      const done = event.activityTaskCompletedEventAttributes;
      const failed = event.activityTaskFailedEventAttributes;
      const key = String(done?.scheduledEventId ?? failed?.scheduledEventId ?? '');
      const callId = scheduled.get(key);
      if (callId === undefined) continue;
      if (done) {
        const data = done.result?.payloads?.[0]?.data;
        const result = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as CallEvents['result']) : null;
        events.set(callId, { completedAt: at, failedAt: null, failureType: null, attempt: started.get(key) ?? null, result });
      }
      if (failed) {
        const failure = failed.failure;
        events.set(callId, {
          completedAt: null,
          failedAt: at,
          failureType: failure?.applicationFailureInfo?.type ?? failure?.cause?.applicationFailureInfo?.type ?? null,
          attempt: started.get(key) ?? null,
          result: null,
        });
      }
    }
    return events;
  }

  /** Registers something to close in {@link cleanup}, after the workers are gone. */
  onCleanup(close: () => Promise<unknown>): void {
    this.closers.push(close);
  }

  /** Kills every worker of this repetition (standbys that never joined included). */
  async cleanup(): Promise<void> {
    this.cleaningUp = true;
    await Promise.all(this.workers.map((w) => w.kill()));
    // Standbys still behind their gate exit on their own.
    for (const file of this.gates()) writeFileSync(`${file}.cancel`, '');
    const late = await Promise.all(this.pending);
    await Promise.all(late.filter((w): w is WorkerProcess => w !== null).map((w) => w.kill()));
    for (const close of this.closers.splice(0)) await close().catch(() => undefined);
  }

  private gates(): string[] {
    const files: string[] = [];
    for (let i = 1; i <= this.seq; i += 1) files.push(this.path(`gate-${i}`));
    return files;
  }
}
