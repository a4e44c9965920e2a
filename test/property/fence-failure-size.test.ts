/**
 * Every failure the fence raises stays within Temporal's failure size limit and names its call,
 * tool and idempotency key, whatever third-party text it quotes (a tool's, a provider's or a
 * driver's error message, any length, any code points, nested causes with stack traces). Temporal
 * keeps an activity's last retryable failure only up to `limit.mutableStateActivityFailureSize.error`
 * (4 KiB by default) and otherwise shows "Failure exceeds size limit." with nothing else.
 *
 * Each path that builds a failure is driven at its largest: a CheckpointError of the fence
 * (`toApplicationFailure`, with and without naming details), a pause under
 * `onUnknownOutcome: 'wait'` and `'fail'` (`pauseFailure`), a stored error result delivered (`deliver`), and
 * an unexpected third-party error. The failure is encoded as a worker sends it: Temporal's
 * default converter, and the payload codec with its failure converter (message and stack moved
 * into an encrypted payload).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import { decodeOptionalFailureToOptionalError, encodeErrorToFailure } from '@temporalio/common/lib/internal-non-workflow/codec-helpers';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/data-converter-helpers';
import { temporal } from '@temporalio/proto';
import { CheckpointError } from '../../src/checkpoint/errors';
import { toApplicationFailure } from '../../src/activities/fence/failures';
import { FAILURE_BUDGET_BYTES } from '../../src/activities/fence/failure-bounds';
import { codecDataConverter } from '../../src/codec/data-converter';
import { createPayloadCodec } from '../../src/codec/payload-codec';
import { deliver, pauseFailure } from '../../src/plugin/fence-interceptor';

/** Temporal's default `limit.mutableStateActivityFailureSize.error`. */
const TEMPORAL_FAILURE_SIZE_LIMIT = 4_096;

const CONVERTERS: readonly { name: string; converter: DataConverter | undefined }[] = [
  { name: 'default converter', converter: undefined },
  { name: 'payload codec', converter: codecDataConverter(createPayloadCodec({ keyId: 'c1', key: randomBytes(32) })) },
];

/** Third-party text: any code points (control characters, astral, lone surrogates), up to 40,000 UTF-16 units. */
const thirdPartyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40_000 }),
  fc.string({ unit: 'grapheme', minLength: 2_000, maxLength: 20_000 }),
  fc.string({ unit: fc.constantFrom('\u0000', '"', '\\', '\u{1F600}', 'é', '\u202E'), minLength: 1_000, maxLength: 20_000 }),
);

/** What names a call: a plugin call id (`act-N`) or a model's tool-call id, a tool name, a key. */
const names = fc.record({
  callId: fc.oneof(
    fc.nat({ max: 100_000 }).map((n) => `act-${n + 1}`),
    fc.stringMatching(/^[A-Za-z0-9_-]{8,200}$/),
  ),
  toolName: fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/),
  idempotencyKey: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => `ttc2-${Buffer.from(bytes).toString('hex')}`),
});

/** A chain of third-party errors (a driver error under a store error under ...), each with its stack. */
function causeChain(texts: readonly string[]): Error | undefined {
  let cause: Error | undefined;
  for (const text of texts) cause = new Error(text, cause === undefined ? undefined : { cause });
  return cause;
}

type Named = { callId: string; toolName: string; idempotencyKey: string };

/** The failures each path builds from the same text and names. */
function failuresOf(text: string, causes: readonly string[], call: Named): { path: string; failure: unknown }[] {
  const chain = causeChain(causes);
  const pause = new CheckpointError(
    'OUTCOME_UNKNOWN',
    `call ${JSON.stringify(call.callId)} was claimed under ${call.toolName} revision v1, and this attempt cannot reconcile it: ${text}`,
    { ...call, toolRevision: 'v1', status: 'uncertain', reason: text, cause: 'BINDING_CONFLICT' },
    { cause: chain },
  );
  const pending = new CheckpointError(
    'RECONCILE_PENDING',
    `the call may have been claimed (${text}); the next attempt reads the checkpoint and decides`,
    { cause: 'BINDING_CONFLICT', extra: [text, text] },
    { cause: pause },
  );
  const stored = {
    callId: call.callId,
    toolName: call.toolName,
    toolRevision: 'v2',
    source: 'store' as const,
    outcome: { ok: false as const, error: { type: text.slice(0, 300) || 'BUSINESS_REJECTION', message: text } },
    idempotencyKey: call.idempotencyKey,
    intentDigest: null,
  };
  return [
    { path: 'a pause (toApplicationFailure)', failure: toApplicationFailure(pause, call) },
    { path: 'a retryable wait naming no call in its own details (toApplicationFailure with the attempt names)', failure: toApplicationFailure(pending, call) },
    { path: "a pause under onUnknownOutcome 'wait' (pauseFailure)", failure: pauseFailure(toApplicationFailure(pause, call) as ApplicationFailure, 'wait', 300_000) },
    {
      path: "a pause of the user's own activity under onUnknownOutcome 'fail' (pauseFailure)",
      failure: pauseFailure(toApplicationFailure(pause, call) as ApplicationFailure, 'fail', 300_000),
    },
    { path: 'a stored error result delivered (deliver)', failure: thrown(() => deliver(stored)) },
    { path: 'an unexpected third-party error (toApplicationFailure)', failure: toApplicationFailure(new Error(text, { cause: chain }), call) },
  ];
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('the size of every failure the fence raises', () => {
  it.each(CONVERTERS)('stays under the limit and names call, tool and key, with the $name', async ({ converter }) => {
    const loaded = loadDataConverter(converter);
    await fc.assert(
      fc.asyncProperty(thirdPartyText, fc.array(thirdPartyText, { maxLength: 4 }), names, async (text, causes, call) => {
        for (const { path, failure } of failuresOf(text, causes, call)) {
          const encoded = await encodeErrorToFailure(loaded, failure);
          const bytes = temporal.api.failure.v1.Failure.encode(encoded).finish().length;
          if (bytes > (converter === undefined ? FAILURE_BUDGET_BYTES : TEMPORAL_FAILURE_SIZE_LIMIT)) throw new Error(`${path}: ${bytes} bytes encoded`);
          // What a reader of the workflow's pending activity gets back: the type and the call's names.
          const decoded = await decodeOptionalFailureToOptionalError(loaded, encoded);
          expect(decoded).toBeInstanceOf(ApplicationFailure);
          expect((decoded as ApplicationFailure).type).toEqual((failure as ApplicationFailure).type);
          expect((decoded as ApplicationFailure).details?.[0]).toMatchObject(call);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('keeps a short failure as it was: message, details and the cause the in-process checks read', () => {
    const pause = new CheckpointError('OUTCOME_UNKNOWN', 'charge call act-1: the outcome is unknown', {
      callId: 'act-1',
      toolName: 'chargeCard',
      idempotencyKey: 'ttc2-ab',
      reason: 'connection reset',
    });
    const failure = toApplicationFailure(pause) as ApplicationFailure;
    expect(failure.message).toBe(pause.message);
    expect(failure.details?.[0]).toEqual(pause.details);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.cause).toBeInstanceOf(CheckpointError);
    expect((failure.cause as CheckpointError).code).toBe('OUTCOME_UNKNOWN');
  });

  it('cuts third-party text with a marker that says how much was cut', () => {
    const text = 'x'.repeat(10_000);
    const failure = toApplicationFailure(new CheckpointError('RECONCILE_PENDING', text, { reason: text })) as ApplicationFailure;
    expect(failure.message).toMatch(/^RECONCILE_PENDING: x+… \[\d+ bytes cut\]$/);
    expect((failure.details?.[0] as { reason: string }).reason).toMatch(/^x+… \[\d+ bytes cut\]$/);
  });
});
