/**
 * Runs one fenced tool call the way a crash test does (docs/protocol.md#crash-windows): attempt 1
 * stops for good at a fence point (by default right after the tool's effect, before its result is
 * stored: a worker killed by SIGKILL), then attempt 2 runs once attempt 1's claim can no longer be
 * outstanding. The report says how often the tool ran and what the retry returned, so a user's test
 * can assert "one effect, result delivered" (a tool with `lookup` or key dedupe) or "paused for a
 * person" (a tool with neither). Runs in `MockActivityEnvironment`: no server needed.
 */
import { ApplicationFailure, type Logger } from '@temporalio/common';
import type { MockActivityEnvironment } from '@temporalio/testing';
import { assertPeersInstalled } from '../optional-peer';
import { callBindingId } from '../checkpoint/call-identity';
import type { CheckpointRecord, JsonValue } from '../checkpoint/types';
import { createToolActivities, defineTool, type ToolActivitiesOptions, type ToolDefinition } from '../activities';
import { DEFAULT_RECONCILE_MARGIN_MS } from '../activities/fence/fenced-tool';
import type { FencePoint } from '../activities/fence/crash-points';
import type { FencedToolResult } from '../activities/contract/contract';
import type { CheckpointStore } from '../stores/checkpoint-store';
import { createTempSqliteStore } from './temp-store';

/** Options of {@link runCrashAndRetry}. */
export interface CrashAndRetryOptions {
  /** The tool under test (a `defineTool` declaration). */
  readonly tool: ToolDefinition<any>;
  /** The arguments the model gives the call. */
  readonly input: JsonValue;
  /** Where attempt 1 stops for good. @default 'after-effect' */
  readonly crashAt?: FencePoint;
  /** The store both attempts use. @default a temporary SQLite store, deleted afterwards */
  readonly store?: CheckpointStore;
  /** @default 'test' */
  readonly tenant?: string;
  /** More options of `createToolActivities` (key secret, payload limits, transient retry). */
  readonly activities?: Omit<Partial<ToolActivitiesOptions>, 'store' | 'tools' | 'hooks' | 'clock'>;
  /** Activity logger. @default the SDK's default logger */
  readonly logger?: Logger;
}

/** What the retry returned: the fenced result, or the typed failure (`type` is a CheckpointError code). */
export type AttemptOutcome =
  { readonly result: FencedToolResult } | { readonly failure: { readonly type: string | null; readonly message: string; readonly nonRetryable: boolean } };

/** What {@link runCrashAndRetry} observed. */
export interface CrashAndRetryReport {
  /** False when attempt 1 finished without reaching `crashAt` (see `firstOutcome`). */
  readonly crashed: boolean;
  /** Calls of the tool's `execute` over both attempts. */
  readonly executions: number;
  /** Calls of `execute` that returned a result: effects applied, as far as the tool says. */
  readonly effects: number;
  /** Calls of the tool's `lookup`. */
  readonly lookups: number;
  /** Attempt 1's outcome when it did not crash, else null. */
  readonly firstOutcome: AttemptOutcome | null;
  /** Attempt 2's outcome, or null when attempt 1 did not crash (no retry was needed). */
  readonly retry: AttemptOutcome | null;
  /** The call's checkpoint after the retry. */
  readonly record: CheckpointRecord | null;
}

/**
 * Runs attempt 1 of a call until `crashAt`, abandons it there (it never resumes, as a killed
 * worker), then runs attempt 2 with the fence's clock moved past attempt 1's settle time (its
 * call deadline plus the reconcile margin), and reports.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a tool `defineTool` refuses; INVALID_CONFIG
 *   when `@temporalio/testing` is not installed; store errors.
 */
export async function runCrashAndRetry(options: CrashAndRetryOptions): Promise<CrashAndRetryReport> {
  assertPeersInstalled(['@temporalio/testing'], 'runCrashAndRetry');
  const counted = countCalls(defineTool(options.tool));
  const temp = options.store === undefined ? await createTempSqliteStore() : undefined;
  const store = options.store ?? temp!.store;
  try {
    const crashAt = options.crashAt ?? 'after-effect';
    const marginMs = options.activities?.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS;
    const call = { workflowId: `crash-and-retry-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`, runId: 'run-1' };
    const input = { tenant: options.tenant ?? 'test', callId: 'call-1', runChainId: call.runId, toolName: counted.tool.name, input: options.input };
    const base = { ...options.activities, store, tools: [counted.tool], reconcileMarginMs: marginMs };

    let reached!: () => void;
    const crashed = new Promise<void>((resolve) => (reached = resolve));
    const first = createToolActivities({
      ...base,
      hooks: {
        step: (point) => {
          if (point !== crashAt) return;
          reached();
          return new Promise<void>(() => undefined); // never resumes: the worker is gone
        },
      },
    });
    const attempt1 = attempt(first.runFencedTool, input, call, 1, options.logger);
    const settled = await Promise.race([crashed.then(() => null), attempt1]);
    if (settled !== null) return { crashed: false, ...counted.counts(), firstOutcome: settled, retry: null, record: await recordOf(store, input, call) };

    const skipMs = counted.tool.callDeadlineMs + marginMs + 1_000;
    const second = createToolActivities({ ...base, clock: () => new Date(Date.now() + skipMs) });
    const retry = await attempt(second.runFencedTool, input, call, 2, options.logger);
    return { crashed: true, ...counted.counts(), firstOutcome: null, retry, record: await recordOf(store, input, call) };
  } finally {
    await temp?.close();
  }
}

async function attempt(
  run: (input: any) => Promise<FencedToolResult>,
  input: object,
  call: { workflowId: string; runId: string },
  n: number,
  logger: Logger | undefined,
): Promise<AttemptOutcome> {
  const { MockActivityEnvironment: MockEnv } = require('@temporalio/testing') as { MockActivityEnvironment: typeof MockActivityEnvironment };
  const env = new MockEnv({ attempt: n, workflowExecution: call, heartbeatTimeoutMs: 60_000 }, logger === undefined ? {} : { logger });
  try {
    return { result: await env.run(run, input) };
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return { failure: { type: error.type ?? null, message: error.message, nonRetryable: error.nonRetryable === true } };
  }
}

function recordOf(store: CheckpointStore, input: { tenant: string; callId: string; runChainId: string }, call: { workflowId: string }): Promise<CheckpointRecord | null> {
  return store.getByCall(`default/${input.tenant}`, callBindingId({ runChainId: input.runChainId, workflowId: call.workflowId, callId: input.callId }));
}

/** The tool with `execute` and `lookup` wrapped to count their calls. */
function countCalls(tool: ReturnType<typeof defineTool<any>>) {
  let executions = 0;
  let effects = 0;
  let lookups = 0;
  const lookup = tool.lookup;
  const wrapped = defineTool({
    ...tool,
    async execute(args, ctx) {
      executions += 1;
      const result = await tool.execute(args, ctx);
      effects += 1;
      return result;
    },
    ...(lookup === undefined ? {} : { lookup: (ctx: Parameters<typeof lookup>[0]) => ((lookups += 1), lookup(ctx)) }),
  });
  return { tool: wrapped, counts: () => ({ executions, effects, lookups }) };
}
