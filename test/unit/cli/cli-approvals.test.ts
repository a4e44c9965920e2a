/**
 * The parts of the approvals command line that need no server: `start --require-approval` /
 * `--approval-ttl` parsing, `approve --state-version`, a refusal's message, and a failed run's
 * cause chain as `start --wait` and `show` print it. End to end: test/e2e/cli-approvals.test.ts.
 */
import { ActivityFailure, ApplicationFailure, TerminatedFailure, TimeoutFailure, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { describeError } from '../../../src/cli/errors';
import { failureChainLines, failureChainOf } from '../../../src/cli/failure-chain';
import { nameList, nonNegativeInteger } from '../../../src/cli/options';
import { approvalRequiredOption } from '../../../src/cli/require-approval';
import { DecisionRefusedError } from '../../../src/operator/run-decisions';

/** The error `fn` throws (fails the test when it throws none). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

/** The code and details of a CheckpointError thrown by `fn`. */
function checkpointError(fn: () => unknown): { code: string; details: unknown } {
  const error = thrown(fn);
  if (!isCheckpointError(error)) throw error;
  return { code: error.code, details: error.details };
}

describe('start --require-approval / --approval-ttl', () => {
  const offered = ['create_ticket', 'send_email'];

  it('names every listed tool with the ttl in ms; the ttl defaults to 15 minutes; spaces and repeats are ignored', () => {
    expect(approvalRequiredOption({ requireApproval: 'create_ticket, send_email,create_ticket' }, offered)).toEqual({
      create_ticket: { expiresAfterMs: 15 * 60_000 },
      send_email: { expiresAfterMs: 15 * 60_000 },
    });
    expect(approvalRequiredOption({ requireApproval: 'send_email', approvalTtl: '90s' }, offered)).toEqual({ send_email: { expiresAfterMs: 90_000 } });
  });

  it('without --require-approval no tool needs approval, and --approval-ttl alone is INVALID_ARGUMENT', () => {
    expect(approvalRequiredOption({}, offered)).toBeUndefined();
    expect(checkpointError(() => approvalRequiredOption({ approvalTtl: '5m' }, offered))).toEqual({ code: 'INVALID_ARGUMENT', details: { field: '--approval-ttl' } });
  });

  it('an empty list or an empty name is INVALID_ARGUMENT naming --require-approval', () => {
    for (const list of ['', ' ', 'create_ticket,', 'create_ticket,,send_email']) {
      expect(checkpointError(() => approvalRequiredOption({ requireApproval: list }, offered))).toEqual({ code: 'INVALID_ARGUMENT', details: { field: '--require-approval' } });
    }
  });

  it('a tool the run does not offer (a misspelt name would let the real tool run unapproved) is INVALID_ARGUMENT naming it', () => {
    const error = thrown(() => approvalRequiredOption({ requireApproval: 'create_tiket,send_email' }, offered));
    expect(isCheckpointError(error, 'INVALID_ARGUMENT') && error.details).toEqual({ field: '--require-approval', actual: ['create_tiket'] });
    expect((error as Error).message).toBe(
      'INVALID_ARGUMENT: --require-approval names "create_tiket", which the run does not offer (it offers create_ticket, send_email); nothing was started',
    );
  });

  it('a ttl that is not a positive whole number of milliseconds is INVALID_ARGUMENT naming --approval-ttl (the workflow would refuse it only after the run started)', () => {
    for (const ttl of ['0s', '-5m', 'soon', '', '0.5ms', '1.5']) {
      expect(checkpointError(() => approvalRequiredOption({ requireApproval: 'send_email', approvalTtl: ttl }, offered))).toEqual({
        code: 'INVALID_ARGUMENT',
        details: { field: '--approval-ttl' },
      });
    }
  });

  it('nameList and nonNegativeInteger parse what they say', () => {
    expect(nameList(' a ,b', '--x')).toEqual(['a', 'b']);
    expect(nonNegativeInteger('0', '--state-version')).toBe(0);
    expect(nonNegativeInteger('17', '--state-version')).toBe(17);
    for (const v of ['-1', '1.5', '1e3', 'x', '', ' 2']) {
      expect(checkpointError(() => nonNegativeInteger(v, '--state-version'))).toEqual({ code: 'INVALID_ARGUMENT', details: { field: '--state-version' } });
    }
  });
});

describe('a refused decision', () => {
  it('names its type once, the run and the call, then the run’s reason; describeError prints that message alone', () => {
    const failure = ApplicationFailure.create({
      type: 'STALE_STATE_VERSION',
      message: 'STALE_STATE_VERSION: the approval was given at state version 1, the run is at 2',
      nonRetryable: true,
    });
    const update = new WorkflowUpdateFailedError('Workflow Update failed', failure);
    const refused = new DecisionRefusedError('STALE_STATE_VERSION', 'run-1', 'call-1', failure.message, { cause: update });
    expect(refused.message).toBe('STALE_STATE_VERSION: run run-1 refused the decision on call-1: the approval was given at state version 1, the run is at 2');
    expect(describeError(refused)).toBe(refused.message);
  });
});

describe('a failed run’s cause chain', () => {
  const checkpointCause = new Error('NOT_PINNED: the run offers tools this worker does not serve: "wipe_database"; the model was not called');
  const notPinned = ApplicationFailure.create({ type: 'NOT_PINNED', message: checkpointCause.message, nonRetryable: true, details: [{ field: 'tools' }], cause: checkpointCause });
  const activity = new ActivityFailure('Activity task failed', 'runModelTurn', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker-1', notPinned);
  const failed = new WorkflowFailedError('Workflow execution failed', activity, RetryState.RETRY_POLICY_NOT_SET);

  it('has one link per failure, outermost first, with the activity and the field it concerns; a cause repeating the message is left out', () => {
    expect(failureChainLines(failureChainOf(failed), 2)).toEqual([
      '  WorkflowFailedError: Workflow execution failed; caused by:',
      '    ActivityFailure [activity runModelTurn, activity id 1, worker worker-1; retry state NON_RETRYABLE_FAILURE]: Activity task failed; caused by:',
      '      ApplicationFailure NOT_PINNED [field tools; non-retryable]: NOT_PINNED: the run offers tools this worker does not serve: "wipe_database"; the model was not called',
    ]);
  });

  it('names the call and tool from the failure details and shows the other details, cut at 500 characters', () => {
    const failure = ApplicationFailure.create({
      type: 'STORE_OUTCOME_UNKNOWN',
      message: 'call c-1: …',
      nonRetryable: false,
      details: [{ callId: 'c-1', toolName: 'send_email', attempt: 3, note: 'x'.repeat(600) }],
    });
    const [link] = failureChainOf(failure);
    expect(link).toMatchObject({ kind: 'ApplicationFailure', type: 'STORE_OUTCOME_UNKNOWN', concerns: 'call c-1, tool send_email', retry: 'retryable' });
    const rest = JSON.stringify({ attempt: 3, note: 'x'.repeat(600) });
    expect(link!.details).toBe(`${rest.slice(0, 500)}… (${rest.length} characters)`);
  });

  it('a timeout names its timeout type; a termination its reason', () => {
    const timedOut = new WorkflowFailedError('Workflow execution timed out', new TimeoutFailure('Timed out', undefined, 'START_TO_CLOSE'), RetryState.TIMEOUT);
    expect(failureChainLines(failureChainOf(timedOut))).toEqual(['WorkflowFailedError: Workflow execution timed out; caused by:', '  TimeoutFailure START_TO_CLOSE: Timed out']);
    const terminated = new WorkflowFailedError('Workflow execution terminated', new TerminatedFailure('operator: stuck run'), RetryState.RETRY_POLICY_NOT_SET);
    expect(failureChainLines(failureChainOf(terminated))).toEqual(['WorkflowFailedError: Workflow execution terminated; caused by:', '  TerminatedFailure: operator: stuck run']);
  });

  it('a cycle or a plain value does not hang', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = a;
    expect(failureChainOf(a)).toHaveLength(1);
    expect(failureChainLines(failureChainOf('text'))).toEqual(['Error: text']);
  });
});
