// One HTTP classifier for tools and model adapters. The SDK adapters map a
// provider's error through classifyHttpFailure; this proves they agree on every status.
import * as anthropic from '@anthropic-ai/sdk';
import * as openai from 'openai';
import { classifyHttpFailure } from '../../../src/activities/contract/error-classes';
import { CheckpointError, isCheckpointError } from '../../../src/checkpoint/errors';
import { isTransientStatus, mapSdkError, modelFailureCode, type SdkErrorClasses } from '../../../src/model/sdk-common';

const sdks: Array<{ provider: 'anthropic' | 'openai'; classes: SdkErrorClasses & { APIError: typeof anthropic.APIError | typeof openai.APIError }; connectionError: () => Error }> =
  [
    {
      provider: 'anthropic',
      classes: { APIError: anthropic.APIError, APIConnectionError: anthropic.APIConnectionError, APIUserAbortError: anthropic.APIUserAbortError },
      connectionError: () => new anthropic.APIConnectionError({ message: 'reset' }),
    },
    {
      provider: 'openai',
      classes: { APIError: openai.APIError, APIConnectionError: openai.APIConnectionError, APIUserAbortError: openai.APIUserAbortError },
      connectionError: () => new openai.APIConnectionError({ message: 'reset' }),
    },
  ];

const statuses = Array.from({ length: 200 }, (_, i) => 400 + i);

function mapStatus(
  sdk: (typeof sdks)[number],
  status: number,
  body: object = { error: { type: 'some_error', message: 'm' } },
  headers: Record<string, string> = {},
): CheckpointError {
  const err = sdk.classes.APIError.generate(status, body, 'failed', new Headers(headers));
  const mapped = mapSdkError(err, sdk.provider, sdk.classes);
  expect(mapped).toBeInstanceOf(CheckpointError);
  return mapped as CheckpointError;
}

describe.each(sdks)('$provider adapter and classifyHttpFailure', (sdk) => {
  it('agree on every status 400–599 (MODEL_REJECTED exactly when the classifier says rejected)', () => {
    for (const status of statuses) {
      const expected = modelFailureCode(classifyHttpFailure({ status, sent: 'yes' }));
      const mapped = mapStatus(sdk, status);
      expect({ status, code: mapped.code }).toEqual({ status, code: expected });
      expect(isTransientStatus(status)).toBe(expected === 'MODEL_TRANSIENT');
    }
  });

  it('408, 429 and every 5xx are MODEL_TRANSIENT; 409 and the other 4xx are MODEL_REJECTED', () => {
    for (const status of [408, 429, 500, 502, 503, 504, 529]) expect(mapStatus(sdk, status).code).toBe('MODEL_TRANSIENT');
    for (const status of [400, 401, 403, 404, 409, 413, 415, 422]) expect(mapStatus(sdk, status).code).toBe('MODEL_REJECTED');
  });

  it('a provider error code is passed to the classifier (an in-flight key code is transient)', () => {
    expect(mapStatus(sdk, 409, { error: { code: 'idempotency_key_in_use', message: 'm' } }).code).toBe('MODEL_TRANSIENT');
    expect(modelFailureCode(classifyHttpFailure({ status: 409, code: 'idempotency_key_in_use' }))).toBe('MODEL_TRANSIENT');
  });

  it('x-should-retry overrides the table, as the SDK obeys it for its own retries', () => {
    expect(mapStatus(sdk, 500, undefined, { 'x-should-retry': 'false' }).code).toBe('MODEL_REJECTED');
    expect(mapStatus(sdk, 409, undefined, { 'x-should-retry': 'true' }).code).toBe('MODEL_TRANSIENT');
  });

  it("a connection error (no answer after sending) is MODEL_TRANSIENT, as the classifier's unknown outcome maps", () => {
    const mapped = mapSdkError(sdk.connectionError(), sdk.provider, sdk.classes);
    expect(isCheckpointError(mapped, 'MODEL_TRANSIENT')).toBe(true);
    expect(modelFailureCode(classifyHttpFailure({ sent: 'maybe' }))).toBe('MODEL_TRANSIENT');
  });

  it('a 429 keeps Retry-After as details.retryAfterMs', () => {
    const mapped = mapStatus(sdk, 429, undefined, { 'retry-after': '3' });
    expect(mapped.code).toBe('MODEL_TRANSIENT');
    expect(mapped.details).toMatchObject({ provider: sdk.provider, status: 429, retryAfterMs: 3000 });
  });
});

describe('modelFailureCode', () => {
  it('retries everything but a rejection: a model request applies nothing, so an unknown outcome is only a lost answer', () => {
    expect(modelFailureCode({ kind: 'transient', type: 'TRANSIENT_EXHAUSTED' })).toBe('MODEL_TRANSIENT');
    expect(modelFailureCode({ kind: 'transient', type: 'OUTCOME_UNKNOWN' })).toBe('MODEL_TRANSIENT');
    expect(modelFailureCode({ kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' })).toBe('MODEL_TRANSIENT');
    expect(modelFailureCode({ kind: 'rejected', type: 'BUSINESS_REJECTION' })).toBe('MODEL_REJECTED');
    expect(modelFailureCode({ kind: 'rejected', type: 'PERMISSION_DENIED' })).toBe('MODEL_REJECTED');
  });
});
