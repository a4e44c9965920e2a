// A run waiting for a person, as the status query reports it, for the console's tests.
import type { ConsoleOperations } from '../../../src/console/operations';
import type { WaitingRun } from '../../../src/operator/waiting-runs';
import type { PendingCallView, RunStatusView } from '../../../src/workflows/agent/types';

/** A call of `transfer` awaiting approval, with `overrides`. */
export function awaitingCall(overrides: Partial<PendingCallView> = {}): PendingCallView {
  return {
    callId: 'c1',
    modelCallId: 'c1',
    toolName: 'transfer',
    turn: 0,
    status: 'awaiting-approval',
    source: null,
    receipt: null,
    outcome: null,
    toolRevision: 'v1',
    intentDigest: 'sha256:aaaa',
    idempotencyKey: 'key-c1',
    errorType: null,
    reason: null,
    arguments: { to: 'acct-1', amount: 5 },
    target: null,
    modelInput: { to: 'acct-1', amount: 5 },
    approvalExpiresAt: '2030-01-01T00:15:00.000Z',
    ...overrides,
  };
}

/** Run `wf-1` at state version 7 with `calls` waiting. */
export function waitingRun(calls: PendingCallView[], overrides: Partial<RunStatusView> = {}): WaitingRun {
  const status: RunStatusView = {
    tenant: 'acme',
    phase: 'awaiting-approval',
    stateVersion: 7,
    turns: 1,
    pendingCalls: calls,
    calls,
    budget: {
      turnsUsed: 1,
      maxTurns: 5,
      toolCallsUsed: calls.length,
      maxToolCalls: 10,
      startedAt: '2030-01-01T00:00:00.000Z',
      deadlineAt: '2030-01-01T01:00:00.000Z',
      remainingMs: 3_600_000,
    },
    paused: null,
    stoppedBecause: null,
    ...overrides,
  };
  return { workflowId: 'wf-1', status, waiting: calls };
}

/** Console operations that record every decision they are asked to send, for the console's HTTP tests. */
export interface RecordingOperations {
  readonly operations: ConsoleOperations;
  /** The runs `listWaitingRuns` answers with. */
  runs: WaitingRun[];
  /** Every decision sent, as [kind, workflowId, request], in order. */
  readonly sent: Array<[string, string, unknown]>;
  /** When set, `approveCall` throws it (after recording the request). */
  refuseWith: Error | null;
  /** How many times the runs were listed. */
  listed: number;
}

/** A fresh {@link RecordingOperations} listing one run (`wf-1`) with one call awaiting approval. */
export function recordingOperations(): RecordingOperations {
  const fake: RecordingOperations = {
    runs: [waitingRun([awaitingCall()])],
    sent: [],
    refuseWith: null,
    listed: 0,
    operations: {
      listWaitingRuns: async () => {
        fake.listed += 1;
        return fake.runs;
      },
      approveCall: async (workflowId, request) => {
        fake.sent.push(['approve', workflowId, request]);
        if (fake.refuseWith) throw fake.refuseWith;
        return { callId: request.callId, decision: 'approved', decidedAt: '2030-01-01T00:01:00.000Z', approvalExpiresAt: '2030-01-01T00:15:00.000Z' };
      },
      rejectCall: async (workflowId, request) => {
        fake.sent.push(['reject', workflowId, request]);
        return { callId: request.callId, decision: 'rejected', decidedAt: '2030-01-01T00:01:00.000Z', approvalExpiresAt: '2030-01-01T00:15:00.000Z' };
      },
      resolveCall: async (workflowId, request) => {
        fake.sent.push(['resolve', workflowId, request]);
        return { callId: request.callId, pauseId: request.pauseId, resolution: request.resolution, status: 'resolved-applied', retryCallId: null };
      },
    },
  };
  return fake;
}
