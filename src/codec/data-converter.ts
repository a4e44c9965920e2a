/**
 * The data converter setting a worker or client passes to Temporal for the payload codec
 * (issue 15 items 7/8). Codecs run outside the workflow sandbox, so workflow code is unaffected.
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';

/**
 * Path of the module exporting the `failureConverter` that moves failure messages and stack
 * traces into encrypted payloads (`./failure-converter`); pass it as `failureConverterPath` to
 * `bundleWorkflowCode` when prebuilding a workflow bundle for workers that use the codec.
 */
export const ENCODED_FAILURE_CONVERTER_PATH: string = require.resolve('./failure-converter');

/**
 * `{ payloadCodecs: [codec], failureConverterPath }` for `Worker.create({ dataConverter })` and
 * `new Client({ dataConverter })`, or undefined (Temporal's default converter, payloads and
 * failure text unencrypted) when `codec` is null. With a codec, failure messages and stack traces
 * are encoded into payloads too ({@link ENCODED_FAILURE_CONVERTER_PATH}), so the codec encrypts
 * them. Every worker and client of a namespace must use the same codec keys.
 */
export function codecDataConverter(codec: PayloadCodec | null): DataConverter | undefined {
  return codec === null ? undefined : { payloadCodecs: [codec], failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH };
}
