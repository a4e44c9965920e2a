/**
 * The JSON body of Temporal's codec server protocol (Temporal docs, "Codec Server"): the Temporal
 * UI and `temporal --codec-endpoint` POST `{ "payloads": [{ "metadata": { "<key>": "<base64>" },
 * "data": "<base64>" }] }` (protobuf JSON of `Payloads`) to `/encode` and `/decode` and read the
 * same shape back.
 */
import type { Payload } from '@temporalio/common';
import { z } from 'zod/v4';
import { CheckpointError } from '../checkpoint/errors';

/** Most payloads one request may carry. */
export const MAX_CODEC_REQUEST_PAYLOADS = 10_000;

// Standard base64 with padding (protobuf JSON writes it) or base64url without padding (it also reads that).
const BASE64_TEXT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$|^[A-Za-z0-9_-]*$/;
const base64 = z.string().regex(BASE64_TEXT, 'must be base64');
const jsonPayload = z.object({
  metadata: z.record(z.string().min(1).max(256), base64).nullish(),
  data: base64.nullish(),
});
const body = z.object({ payloads: z.array(jsonPayload).max(MAX_CODEC_REQUEST_PAYLOADS) });

/** One payload in the protocol's JSON form. */
export interface JsonPayload {
  readonly metadata: Record<string, string>;
  readonly data: string;
}

/**
 * Parses a request body (already JSON-parsed) into payloads.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the first bad path (`payloads.0.data`, …)
 *   when the body is not `{ payloads: [...] }` with base64 metadata values and data, or carries
 *   more than {@link MAX_CODEC_REQUEST_PAYLOADS} payloads.
 */
export function payloadsFromJson(value: unknown): Payload[] {
  const parsed = body.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map(String).join('.') || 'body';
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `codec request ${path}: ${issue.message}; expected { "payloads": [{ "metadata": { "<key>": "<base64>" }, "data": "<base64>" }] }`,
      { field: path },
    );
  }
  return parsed.data.payloads.map(({ metadata, data }) => ({
    metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([key, text]) => [key, fromBase64(text)])),
    data: fromBase64(data ?? ''),
  }));
}

/** Payloads in the protocol's JSON form (standard base64 with padding). */
export function payloadsToJson(payloads: readonly Payload[]): { payloads: JsonPayload[] } {
  return {
    payloads: payloads.map((payload) => ({
      metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, bytes]) => [key, Buffer.from(bytes ?? new Uint8Array(0)).toString('base64')])),
      data: Buffer.from(payload.data ?? new Uint8Array(0)).toString('base64'),
    })),
  };
}

function fromBase64(text: string): Buffer {
  return Buffer.from(text, /[-_]/.test(text) ? 'base64url' : 'base64');
}
