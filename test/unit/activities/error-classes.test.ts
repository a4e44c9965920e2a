// The retry policy's error classes: one table, one HTTP classifier, and the demo tools' mapping of
// provider errors onto it.
import { classifyHttpFailure, TOOL_ERROR_CLASSES, ToolError } from '../../../src/activities';
import { toolErrorKind } from '../../../src/activities/tools/define-tool';
import { classifyProviderError } from '../../../examples/demo-tools';
import { ProviderClient, ProviderRejectedError, ProviderTransientError, ProviderUnknownOutcomeError } from '../../../examples/provider/client';

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
      RESOLVED_NOT_APPLIED: { retryable: false },
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
    [{ status: 408 }, 'transient', 'TRANSIENT_EXHAUSTED'],
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
    [{ status: 409, sent: 'yes' as const, keyed: false }, 'rejected', 'BUSINESS_REJECTION'],
    [{ status: 500 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ status: 502 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ status: 504 }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
    [{ sent: 'maybe' as const }, 'unknown-outcome', 'OUTCOME_UNKNOWN'],
  ])('%j is %s / %s', (failure, kind, type) => {
    expect(classifyHttpFailure(failure)).toEqual({ kind, type });
  });

  // A 409 to a keyed request means the same key is still in flight (or applied),
  // never "refused": retried in the attempt with the same key, an unknown outcome if that runs out.
  it.each([
    ['a plain 409 to a keyed request', { status: 409, sent: 'yes' as const, keyed: true }],
    ["Stripe's idempotency_key_in_use (keyed implied)", { status: 409, code: 'idempotency_key_in_use', sent: 'yes' as const }],
    ["Stripe's idempotency_key_in_use, keyed", { status: 409, code: 'idempotency_key_in_use', keyed: true }],
    ['an RFC 9457 …/idempotency-key-in-flight problem (keyed implied)', { status: 409, problemType: `${BASE}idempotency-key-in-flight` }],
    ['an RFC 9457 in-flight problem, keyed', { status: 409, problemType: `${BASE}idempotency-key-in-flight`, sent: 'yes' as const, keyed: true }],
    ['an in-flight problem with another 4xx status', { status: 429, problemType: `${BASE}idempotency-key-in-flight` }],
  ])('%s is transient / OUTCOME_UNKNOWN, never a final rejection', (_name, failure) => {
    expect(classifyHttpFailure(failure)).toEqual({ kind: 'transient', type: 'OUTCOME_UNKNOWN' });
  });

  it('a 409 to a request without a key stays a business rejection; other keyed answers keep their row', () => {
    expect(classifyHttpFailure({ status: 409, sent: 'yes' })).toEqual({ kind: 'rejected', type: 'BUSINESS_REJECTION' });
    expect(classifyHttpFailure({ status: 409, code: 'resource_conflict', keyed: false })).toEqual({ kind: 'rejected', type: 'BUSINESS_REJECTION' });
    expect(classifyHttpFailure({ status: 429, keyed: true })).toEqual({ kind: 'transient', type: 'TRANSIENT_EXHAUSTED' });
    expect(classifyHttpFailure({ status: 404, keyed: true })).toEqual({ kind: 'rejected', type: 'BUSINESS_REJECTION' });
    expect(classifyHttpFailure({ status: 422, problemType: `${BASE}idempotency-key-reused`, keyed: true })).toEqual({ kind: 'rejected', type: 'IDEMPOTENCY_CONFLICT' });
    expect(classifyHttpFailure({ status: 500, keyed: true })).toEqual({ kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' });
  });

  it('every status 400–599 gets a class; no 4xx but an in-flight key is an unknown outcome, and a keyed request changes only 409', () => {
    for (let status = 400; status < 600; status += 1) {
      const unkeyed = classifyHttpFailure({ status, sent: 'yes' });
      const keyed = classifyHttpFailure({ status, sent: 'yes', keyed: true });
      expect(TOOL_ERROR_CLASSES[unkeyed.type]).toBeDefined();
      if (status < 500) expect(unkeyed.kind).not.toBe('unknown-outcome');
      else expect(unkeyed.kind === 'unknown-outcome' || status === 503).toBe(true);
      if (status === 409) expect(keyed).toEqual({ kind: 'transient', type: 'OUTCOME_UNKNOWN' });
      else expect(keyed).toEqual(unkeyed);
    }
  });
});

describe('the demo provider client classifies with classifyHttpFailure', () => {
  function clientAnswering(status: number, body?: object): { client: ProviderClient; requests: Array<Record<string, string>> } {
    const requests: Array<Record<string, string>> = [];
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      requests.push({ ...(init.headers as Record<string, string>) });
      return new Response(body === undefined ? '' : JSON.stringify(body), { status, headers: body === undefined ? {} : { 'content-type': 'application/problem+json' } });
    }) as unknown as typeof fetch;
    return { client: new ProviderClient({ baseUrl: 'http://provider.invalid', fetch: fetchImpl }), requests };
  }
  const ticket = { title: 't', body: 'b', queue: 'q' };

  it('a plain 409 to a request sent with an Idempotency-Key is transient and says keyed; the demo tools store no rejection', async () => {
    const { client, requests } = clientAnswering(409);
    const error = await client.createTicket(ticket, { idempotencyKey: 'k-1' }).catch((e: unknown) => e);
    expect(requests[0]).toHaveProperty('Idempotency-Key');
    expect(error).toBeInstanceOf(ProviderTransientError);
    expect(error).toMatchObject({ status: 409, sent: 'yes', keyed: true });
    const { status, sent, keyed } = error as ProviderTransientError;
    expect(classifyHttpFailure({ status, sent, keyed })).toEqual({ kind: 'transient', type: 'OUTCOME_UNKNOWN' });
  });

  it('a 409 …/idempotency-key-in-flight problem is transient / OUTCOME_UNKNOWN through the demo tools (same key, never a stored rejection)', async () => {
    const { client } = clientAnswering(409, { type: `${BASE}idempotency-key-in-flight`, title: 'in progress', status: 409 });
    const error = await client.createTicket(ticket, { idempotencyKey: 'k-2' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderTransientError);
    const tool = classifyProviderError(error);
    expect(tool).toEqual(expect.objectContaining({ name: 'ToolError', kind: 'transient', type: 'OUTCOME_UNKNOWN' }));
    expect(toolErrorKind(tool)).toBe('transient');
  });

  it('a 409 to a request without a key is a rejection', async () => {
    const { client, requests } = clientAnswering(409, { type: `${BASE}conflict`, title: 'conflict', status: 409 });
    const error = await client.sendEmail({ to: 'a@b.c', subject: 's', body: 'b' }).catch((e: unknown) => e);
    expect(requests[0]).not.toHaveProperty('Idempotency-Key');
    expect(error).toBeInstanceOf(ProviderRejectedError);
    expect(error).toMatchObject({ status: 409, keyed: false });
    expect(classifyProviderError(error)).toEqual(expect.objectContaining({ kind: 'rejected', type: 'BUSINESS_REJECTION' }));
  });

  it('429 and 408 are transient, 500 an unknown outcome, 404 a rejection', async () => {
    expect(
      await clientAnswering(429)
        .client.sendEmail({ to: 'a@b.c', subject: 's', body: 'b' })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(ProviderTransientError);
    expect(
      await clientAnswering(408)
        .client.sendEmail({ to: 'a@b.c', subject: 's', body: 'b' })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(ProviderTransientError);
    expect(
      await clientAnswering(500)
        .client.createTicket(ticket, { idempotencyKey: 'k' })
        .catch((e: unknown) => e),
    ).toMatchObject({ kind: 'unknown-outcome', sent: 'maybe', keyed: true });
    expect(
      await clientAnswering(404)
        .client.closeTicket('T-1')
        .catch((e: unknown) => e),
    ).toBeInstanceOf(ProviderRejectedError);
  });
});

describe('classifyProviderError (demo tools)', () => {
  it('a 429 with Retry-After stays transient, keeps the delay and names the class', () => {
    const error = classifyProviderError(new ProviderTransientError('createTicket: 429', { operation: 'createTicket', status: 429, sent: 'yes', retryAfterMs: 1_000 }));
    expect(error).toEqual(expect.objectContaining({ name: 'ToolError', kind: 'transient', type: 'TRANSIENT_EXHAUSTED', retryAfterMs: 1_000 }));
  });

  it('a 422 for a reused idempotency key is an IDEMPOTENCY_CONFLICT, not a generic rejection', () => {
    const error = classifyProviderError(
      new ProviderRejectedError('createTicket: 422', {
        operation: 'createTicket',
        status: 422,
        sent: 'yes',
        problem: { type: `${BASE}idempotency-key-reused`, title: 'reused', status: 422 },
      }),
    );
    expect(error).toEqual(expect.objectContaining({ kind: 'rejected', type: 'IDEMPOTENCY_CONFLICT' }));
  });

  it('a 403 is PERMISSION_DENIED and a 400 is INVALID_TOOL_INPUT', () => {
    expect(classifyProviderError(new ProviderRejectedError('x', { operation: 'sendEmail', status: 403, sent: 'yes' }))).toEqual(
      expect.objectContaining({ kind: 'rejected', type: 'PERMISSION_DENIED' }),
    );
    expect(classifyProviderError(new ProviderRejectedError('x', { operation: 'sendEmail', status: 400, sent: 'yes' }))).toEqual(
      expect.objectContaining({ kind: 'rejected', type: 'INVALID_TOOL_INPUT' }),
    );
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
