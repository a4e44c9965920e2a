/**
 * Shared pieces of the SDK adapters: per-turn options, tool result text, and the mapping of
 * SDK errors.
 *
 * Maps errors of the official provider SDKs (`@anthropic-ai/sdk`, `openai`; both Stainless
 * clients with the same error classes) to {@link CheckpointError}s the turn activity can classify.
 *
 * Policy: the SDK client retries first (its `maxRetries`, exponential backoff with jitter,
 * honouring `retry-after-ms` / `retry-after`). What is still failing afterwards is classified by
 * the one HTTP table of the project, `classifyHttpFailure` (`src/activities/contract/error-classes.ts`),
 * and becomes `MODEL_TRANSIENT` (retryable; `details.retryAfterMs` from the last response, for
 * the activity's `nextRetryDelay`) or `MODEL_REJECTED` (not retryable); see {@link modelFailureCode}.
 */
import { z } from 'zod/v4';
import { classifyHttpFailure, type HttpFailureClass } from '../activities/contract/error-classes';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { ConversationMessage, ModelTurnInput } from './types';

/** Which adapter family raised an error (`details.provider`). */
export type ModelProvider = 'anthropic' | 'openai' | 'scripted';

const turnOptionsSchema = z.strictObject({
  model: z.string().min(1).optional(),
  maxTokens: z.number().int().positive().optional(),
});

/** Parses per-turn `modelOptions` of the SDK adapters: `{ model?, maxTokens? }` or absent. */
export function parseSdkTurnOptions(modelOptions: JsonValue | undefined, adapter: string): { model?: string; maxTokens?: number } {
  if (modelOptions === undefined || modelOptions === null) return {};
  const parsed = turnOptionsSchema.safeParse(modelOptions);
  if (!parsed.success) {
    throw new CheckpointError('INVALID_MODEL_OPTIONS', `${adapter} modelOptions must be { model?: string, maxTokens?: integer }: ${parsed.error.issues[0]?.message ?? ''}`, {
      adapter,
    });
  }
  return parsed.data;
}

/** Text of a tool result as sent to a provider: strings as they are, other JSON as JSON text. */
export function toolResultText(content: JsonValue): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

/** The SDK error classes the mapping needs (pass the provider module's exports). */
export interface SdkErrorClasses {
  readonly APIError: abstract new (...args: never[]) => Error;
  readonly APIConnectionError: abstract new (...args: never[]) => Error;
  readonly APIUserAbortError: abstract new (...args: never[]) => Error;
}

interface HeadersLike {
  get(name: string): string | null;
}

/**
 * Milliseconds to wait as the response headers ask: `retry-after-ms`, else `retry-after` in
 * seconds or as an HTTP date. Null when absent, unparseable or not positive.
 */
export function retryAfterMs(headers: HeadersLike | undefined | null, now: number = Date.now()): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) > 0) return Math.ceil(Number(ms));
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return null;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds > 0 ? Math.ceil(seconds * 1000) : null;
  const date = Date.parse(after);
  return Number.isFinite(date) && date > now ? date - now : null;
}

/**
 * The model error code of a classified HTTP failure: `MODEL_REJECTED` when the classifier says
 * `rejected`, `MODEL_TRANSIENT` otherwise.
 *
 * A model request applies nothing (it only generates a turn), so re-sending it is harmless:
 * `transient` is retried, and so is `unknown-outcome` (a 5xx, 529 overloaded, a connection lost
 * after sending): for a tool that means "may have been applied", for a model call it only means
 * "the answer was lost". A model request carries no idempotency key, so a 409 follows the
 * classifier's unkeyed rule: `BUSINESS_REJECTION`, hence `MODEL_REJECTED`, once the SDK's own
 * retries (which repeat a 409 as a lock timeout) are spent. 408, 429 and 503 are transient, 5xx
 * are retried, every other 4xx is rejected, exactly as for a tool.
 */
export function modelFailureCode(failure: HttpFailureClass): 'MODEL_TRANSIENT' | 'MODEL_REJECTED' {
  return failure.kind === 'rejected' ? 'MODEL_REJECTED' : 'MODEL_TRANSIENT';
}

/**
 * Whether a provider's HTTP answer to a model request is worth retrying: the provider's
 * explicit `x-should-retry: true|false` (the header the SDKs obey for their own retries) when
 * present, else {@link modelFailureCode} of `classifyHttpFailure({ status, code, sent: 'yes' })`.
 *
 * @param code the provider's error code or type (`error.code ?? error.type` of the body), if any.
 */
export function isTransientStatus(status: number, headers?: HeadersLike | null, code?: string | null): boolean {
  const hint = headers?.get('x-should-retry');
  if (hint === 'true') return true;
  if (hint === 'false') return false;
  return modelFailureCode(classifyHttpFailure({ status, sent: 'yes', ...(code ? { code } : {}) })) === 'MODEL_TRANSIENT';
}

/**
 * What to throw for an error raised by an SDK call: `signal.reason` when our signal aborted
 * (cancellation stays cancellation), a {@link CheckpointError} for API and connection errors, the
 * error itself otherwise. An API error with a status is `MODEL_TRANSIENT` or `MODEL_REJECTED` as
 * {@link isTransientStatus} says (the `classifyHttpFailure` table, unless `x-should-retry`
 * overrides it); a connection error or an API error without a status is an answer lost after
 * sending, retried as `MODEL_TRANSIENT` (see {@link modelFailureCode}).
 */
export function mapSdkError(err: unknown, provider: ModelProvider, classes: SdkErrorClasses, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof classes.APIUserAbortError) return err;
  if (err instanceof classes.APIConnectionError) {
    return new CheckpointError('MODEL_TRANSIENT', `${provider}: ${err.message}`, { provider, status: null }, { cause: err });
  }
  if (err instanceof classes.APIError) {
    const { status, headers, requestID } = err as unknown as {
      status?: number;
      headers?: HeadersLike;
      requestID?: string | null;
      error?: unknown;
    };
    if (typeof status !== 'number') {
      return new CheckpointError('MODEL_TRANSIENT', `${provider}: ${err.message}`, { provider, status: null }, { cause: err });
    }
    const errorType = providerErrorType(err);
    const details = { provider, status, requestId: requestID ?? null, errorType };
    if (isTransientStatus(status, headers, errorType)) {
      const delayMs = retryAfterMs(headers);
      return new CheckpointError('MODEL_TRANSIENT', `${provider} answered ${err.message}`, delayMs === null ? details : { ...details, retryAfterMs: delayMs }, { cause: err });
    }
    return new CheckpointError('MODEL_REJECTED', `${provider} answered ${err.message}`, details, { cause: err });
  }
  return err;
}

/** `error.type` of an Anthropic error body or `error.code ?? error.type` of an OpenAI one. */
function providerErrorType(err: Error): string | null {
  const body = (err as { error?: unknown }).error;
  if (typeof body !== 'object' || body === null) return null;
  const inner = (body as { error?: unknown }).error;
  const source = typeof inner === 'object' && inner !== null ? inner : body;
  const { code, type } = source as { code?: unknown; type?: unknown };
  if (typeof code === 'string') return code;
  if (typeof type === 'string') return type;
  return null;
}

/**
 * Constructor options shared by the official SDK clients: `apiKey`, `baseURL` and `timeout`
 * (ms) only when given, `maxRetries` @default 2 (the SDKs back off with jitter and honour
 * Retry-After).
 */
export function sdkClientOptions(options: { readonly apiKey?: string; readonly baseURL?: string; readonly maxRetries?: number; readonly timeoutMs?: number }): {
  apiKey?: string;
  baseURL?: string;
  maxRetries: number;
  timeout?: number;
} {
  return {
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    maxRetries: options.maxRetries ?? 2,
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  };
}

/**
 * The turn's conversation. The model-turn activity always resolves it (from `messages` or the
 * side-store `conversation`) before calling an adapter, so an absent one is a programming error.
 *
 * @throws CheckpointError INVALID_ARGUMENT (`details.field: 'messages'`) when `input.messages` is absent.
 */
export function requireMessages(input: ModelTurnInput, adapter: string): readonly ConversationMessage[] {
  if (input.messages === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', `model adapter ${adapter} needs the resolved conversation in messages (turn ${input.turn})`, {
      adapter,
      field: 'messages',
    });
  }
  return input.messages;
}

/**
 * The body of an SDK call's response as text (`request` is the SDK's API promise; its
 * `asResponse()` gives the raw `Response`), so number literals are checked as written before any
 * `JSON.parse`. Errors as {@link mapSdkError}; a body cut off while read is an answer lost after
 * sending: `MODEL_TRANSIENT` (retried).
 */
export async function readSdkResponseText(request: { asResponse(): Promise<Response> }, provider: ModelProvider, classes: SdkErrorClasses, signal?: AbortSignal): Promise<string> {
  try {
    return await (await request.asResponse()).text();
  } catch (err) {
    const mapped = mapSdkError(err, provider, classes, signal);
    if (mapped === err && !(err instanceof classes.APIUserAbortError))
      throw new CheckpointError('MODEL_TRANSIENT', `${provider}: the response could not be read: ${(err as Error).message}`, { provider, status: null }, { cause: err });
    throw mapped;
  }
}
