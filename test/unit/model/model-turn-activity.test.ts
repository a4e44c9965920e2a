import { join } from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { toApplicationFailure } from '../../../src/activities/fence/failures';
import { createModelActivities } from '../../../src/activities/agent/model-turn';
import { CheckpointError, type CheckpointErrorCode } from '../../../src/checkpoint/errors';
import type { ModelAdapter } from '../../../src/model/model-adapter';
import { ScriptedModel } from '../../../src/model/scripted-model';
import { loadTranscriptFile } from '../../../src/model/transcript';
import type { ModelTurnInput } from '../../../src/model/types';

const input = (turn: number, model = 'scripted'): ModelTurnInput => ({
  model,
  turn,
  messages: [{ role: 'user', text: 'go' }],
  tools: ['create_ticket', 'send_email'],
});

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

test('runModelTurn dispatches by adapter name (in an activity context)', async () => {
  const transcript = await loadTranscriptFile(join(__dirname, '../../../examples/transcripts/openai-triage.json'));
  const scripted = new ScriptedModel({ transcripts: transcript, recordRequests: true });
  const { runModelTurn } = createModelActivities({ adapters: { scripted } });
  const env = new MockActivityEnvironment();
  const result = await env.run(runModelTurn, input(0));
  expect(result).toEqual(transcript.turns[0]);
  expect(scripted.requests).toHaveLength(1);
});

test('unknown adapter → non-retryable ApplicationFailure UNKNOWN_MODEL', async () => {
  const { runModelTurn } = createModelActivities({ adapters: { scripted: new ScriptedModel({ transcripts: [] }) } });
  const failure = await failureOf(runModelTurn(input(0, 'gpt-9')));
  expect(failure.type).toBe('UNKNOWN_MODEL');
  expect(failure.nonRetryable).toBe(true);
  expect(failure.message).toContain('"gpt-9"');
  expect(failure.details).toEqual([{ model: 'gpt-9', known: ['scripted'] }]);
});

test('an exhausted script → non-retryable SCRIPT_EXHAUSTED', async () => {
  const transcript = await loadTranscriptFile(join(__dirname, '../../../examples/transcripts/anthropic-ticket.json'));
  const { runModelTurn } = createModelActivities({ adapters: { scripted: new ScriptedModel({ transcripts: transcript }) } });
  const failure = await failureOf(runModelTurn(input(5)));
  expect(failure.type).toBe('SCRIPT_EXHAUSTED');
  expect(failure.nonRetryable).toBe(true);
  expect(failure.details?.[0]).toMatchObject({ transcript: 'anthropic-ticket', turn: 5 });
});

test('toApplicationFailure on model errors: transient keeps retryable with the provider Retry-After; typed checkpoint errors stay typed', () => {
  const transient = toApplicationFailure(new CheckpointError('MODEL_TRANSIENT', 'anthropic answered 429', { status: 429, retryAfterMs: 3000 })) as ApplicationFailure;
  expect(transient.type).toBe('MODEL_TRANSIENT');
  expect(transient.nonRetryable).toBe(false);
  expect(transient.nextRetryDelay).toBe(3000);
  expect(transient.details).toEqual([{ status: 429, retryAfterMs: 3000 }]);
  const noDelay = toApplicationFailure(new CheckpointError('MODEL_TRANSIENT', 'reset', {})) as ApplicationFailure;
  expect(noDelay.nextRetryDelay).toBeUndefined();
  const rejected = toApplicationFailure(new CheckpointError('MODEL_REJECTED', 'bad request', { status: 400 })) as ApplicationFailure;
  expect(rejected.nonRetryable).toBe(true);
  const badInput = toApplicationFailure(new CheckpointError('INVALID_TOOL_INPUT', 'call_x arguments are not valid JSON', { callId: 'call_x' })) as ApplicationFailure;
  expect(badInput.type).toBe('INVALID_TOOL_INPUT');
  expect(badInput.nonRetryable).toBe(true);
  expect(badInput.details).toEqual([{ callId: 'call_x' }]);
  // Anything else is a retryable UNEXPECTED failure (the one boundary mapping's rule).
  const other = new Error('boom');
  const unexpected = toApplicationFailure(other) as ApplicationFailure;
  expect(unexpected).toBeInstanceOf(ApplicationFailure);
  expect(unexpected.type).toBe('UNEXPECTED');
  expect(unexpected.nonRetryable).toBe(false);
  // The cause is the error, cut to the failure's size bounds (its class and message kept; see failure-bounds).
  expect(unexpected.cause).toBeInstanceOf(Error);
  expect(unexpected.cause?.message).toBe('boom');
  expect(unexpected.cause?.stack?.split('\n')[0]).toBe('Error: boom');
  // Cancellation (the activity signal's reason) passes through unchanged.
  const cancelled = new CancelledFailure('Activity cancelled');
  expect(toApplicationFailure(cancelled)).toBe(cancelled);
});

test.each<[CheckpointErrorCode, boolean]>([
  ['INVALID_TRANSCRIPT', true],
  ['SCRIPT_EXHAUSTED', true],
  ['INVALID_MODEL_OPTIONS', true],
  ['UNKNOWN_MODEL', true],
  ['MISSING_TOOL_SPEC', true],
  ['MODEL_RESPONSE_INVALID', true],
  ['MODEL_TRANSIENT', false],
  ['MODEL_REJECTED', true],
])('model code %s maps to an ApplicationFailure of that type with nonRetryable = %s', (code, nonRetryable) => {
  const error = new CheckpointError(code, 'x', { turn: 1 });
  expect(error.retryable).toBe(!nonRetryable);
  const failure = toApplicationFailure(error) as ApplicationFailure;
  expect(failure.type).toBe(code);
  expect(failure.nonRetryable).toBe(nonRetryable);
  expect(failure.message).toBe(`${code}: x`);
  expect(failure.details).toEqual([{ turn: 1 }]);
});

test('activity cancellation aborts the adapter through the signal, and heartbeats flow while it waits', async () => {
  let sawSignal: AbortSignal | undefined;
  const slow: ModelAdapter = {
    name: 'slow',
    turn: (_input, signal) =>
      new Promise((_resolve, reject) => {
        sawSignal = signal;
        signal?.addEventListener('abort', () => reject(signal.reason));
      }),
  };
  const { runModelTurn } = createModelActivities({ adapters: { slow }, heartbeatIntervalMs: 20 });
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 1000 });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const running = env.run(runModelTurn, input(3, 'slow'));
  await new Promise((r) => setTimeout(r, 100));
  expect(beats.length).toBeGreaterThanOrEqual(2);
  expect(beats[0]).toEqual({ turn: 3 });
  env.cancel();
  const err = await running.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CancelledFailure);
  expect(sawSignal?.aborted).toBe(true);
  const count = beats.length;
  await new Promise((r) => setTimeout(r, 60));
  expect(beats.length).toBe(count); // heartbeat timer stopped
});
