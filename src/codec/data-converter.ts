/**
 * The data converter setting a worker or client passes to Temporal for the payload codec
 * (issue 15 item 8). Codecs run outside the workflow sandbox, so workflow code is unaffected.
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';

/**
 * `{ payloadCodecs: [codec] }` for `Worker.create({ dataConverter })` and `new Client({ dataConverter })`,
 * or undefined (Temporal's default converter, payloads unencrypted) when `codec` is null.
 * Every worker and client of a namespace must use the same codec keys.
 */
export function codecDataConverter(codec: PayloadCodec | null): DataConverter | undefined {
  return codec === null ? undefined : { payloadCodecs: [codec] };
}
