/**
 * RFC 8785 JSON Canonicalization Scheme through the maintained `canonicalize` library, after
 * our own JSON check so nothing is silently dropped or turned into null. Sandbox-safe.
 */
import canonicalize from 'canonicalize';
import { assertJsonValue, type JsonBoundsOptions } from './bounds';

/**
 * The RFC 8785 canonical JSON text of `value`: object keys sorted by UTF-16 code units
 * (RFC 8785 §3.2.3), numbers in ECMAScript form (§3.2.2.3), no whitespace.
 *
 * @param what names the value in error messages. @default 'value'
 * @throws {@link CheckpointError} NOT_JSON or PAYLOAD_TOO_LARGE from {@link assertJsonValue}.
 * @see RFC 8785
 */
export function canonicalJson(value: unknown, what = 'value', options?: JsonBoundsOptions): string {
  assertJsonValue(value, what, options);
  return canonicalize(value) as string;
}
