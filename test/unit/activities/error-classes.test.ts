// The retry policy's error classes (issue 6 "Retry policy"): one table, one HTTP classifier,
// and the demo tools' mapping of provider errors onto it.
import { classifyHttpFailure, TOOL_ERROR_CLASSES, ToolError } from '../../../src/activities';
import { toolErrorKind } from '../../../src/activities/define-tool';
import { classifyProviderError } from '../../../examples/demo-tools';
import { ProviderRejectedError, ProviderTransientError, ProviderUnknownOutcomeError } from '../../../examples/provider/client';

const BASE = 'https://provider.example/problems/';

describe('TOOL_ERROR_CLASSES', () => {
  it('names every class of the retry policy, and only the transient class is retried', () => {
    expect(TOOL_ERROR_CLASSES).toEqual({
      TRANSIENT_EXHAUSTED: { retryable: true },
      INVALID_TOOL_INPUT: { retryable: false },
      PERMISSION_DENIED: { retryable: false },
      BUSINESS_REJECTION: { retryable: false },
      IDEMPOTENCY_CONFLICT: { retryable: false },
      USER_REJECTION: { retryable: false },
      UNKNOWN_TOOL: { retryable: false },
      OUTCOME_UNKNOWN: { retryable: false },
    });
  });

  it('a ToolError without a type gets the class of its kind', () => {
    expect(new ToolError('transient', 'x').type).toBe('TRANSIENT_EXHAUSTED');
    expect(new ToolError('rejected', 'x').type).toBe('BUSINESS_REJECTION');
    expect(new ToolError('unknown-outcome', 'x').type).toBe('OUTCOME_UNKNOWN');
  });
});

describe('classifyHttpFailure', () => {
  it.each([
    [{ status: 429 }, 'transient', 'TRANSIENT_EXHAUSTED'],
    [{ status: 503 }, 'transient', 'TRANSIENT_EXHAUSTED'],
    [{ status: 409, problemType: `${BASE}idempotency-key-in-flight` }, 'transient', 'TRANSIENT_EXHAUSTED'],
    [{ sent: 'no' as const }, 'transient', 'TRANSIENT_EXHAUSTED'],
    [{ status: 400 }, 'rejected', 'INVALID_TOOL_INPUT'],
    [{ status: 413 }, 'rejected', 'INVALID_TOOL_INPUT'],
    [{ status: 415 }, 'rejected', 'INVALID_TOOL_INPUT'],
    [{ status: 422 }, 'rejected', 'INVALID_TOOL_INPUT'],
    [{ status: 401 }, 'rejected', 'PERMISSION_DENIED'],
    [{ status: 403 }, 'rejected', 'PERMISSION_DENIED'],
    [{ status: 422, problemType: `${BASE}idempotency-key-reused` }, 'rejected', 'IDEMPOTENCY_CONFLICT'],
    [{ status: 404 }, 'rejected', 'BUSINESS_REJECTION'],
    [{ status: 409 }, 'rejected', 'BUSINESS_REJECTION'],
    [{ status: 500 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ status: 502 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ status: 504 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ sent: 'maybe' as const }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
  ])('%j is %s / %s', (failure, kind, type) => {
    expect(classifyHttpFailure(failure)).toEqual({ kind, type });
  });
});

describe('classifyProviderError (demo tools)', () => {
  it('a 429 with Retry-After stays transient, keeps the delay and names the class', () => {
    const error = classifyProviderError(new ProviderTransientError('createTicket: 429', { operation: 'createTicket', status: 429, sent: 'yes', retryAfterMs: 1_000 }));
    expect(error).toEqual(expect.objectContaining({ name: 'ToolError', kind: 'transient', type: 'TRANSIENT_EXHAUSTED', retryAfterMs: 1_000 }));
  });

  it('a 422 for a reused idempotency key is an IDEMPOTENCY_CONFLICT, not a generic rejection', () => {
    const error = classifyProviderError(
      new ProviderRejectedError('createTicket: 422', { operation: 'createTicket', status: 422, sent: 'yes', problem: { type: `${BASE}idempotency-key-reused`, title: 'reused', status: 422 } }),
    );
    expect(error).toEqual(expect.objectContaining({ kind: 'rejected', type: 'IDEMPOTENCY_CONFLICT' }));
  });

  it('a 403 is PERMISSION_DENIED and a 400 is INVALID_TOOL_INPUT', () => {
    expect(classifyProviderError(new ProviderRejectedError('x', { operation: 'sendEmail', status: 403, sent: 'yes' }))).toEqual(expect.objectContaining({ kind: 'rejected', type: 'PERMISSION_DENIED' }));
    expect(classifyProviderError(new ProviderRejectedError('x', { operation: 'sendEmail', status: 400, sent: 'yes' }))).toEqual(expect.objectContaining({ kind: 'rejected', type: 'INVALID_TOOL_INPUT' }));
  });

  it('a failure after the request may have been sent stays an unknown outcome, never "failed, safe to resend"', () => {
    const reset = classifyProviderError(new ProviderUnknownOutcomeError('sendEmail: reset', { operation: 'sendEmail', sent: 'maybe', networkCode: 'UND_ERR_SOCKET' }));
    const status500 = classifyProviderError(new ProviderUnknownOutcomeError('sendEmail: 500', { operation: 'sendEmail', status: 500, sent: 'maybe' }));
    for (const error of [reset, status500]) {
      expect(error).toEqual(expect.objectContaining({ kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' }));
      expect(toolErrorKind(error)).toBe('unknown-outcome');
    }
  });

  it('any other error passes through unchanged', () => {
    const error = new Error('boom');
    expect(classifyProviderError(error)).toBe(error);
  });
});
