/**
 * The data converter setting a worker or client passes to Temporal for the payload codec
 *. Codecs run outside the workflow sandbox, so workflow code is unaffected.
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { CheckpointError } from '../checkpoint/errors';
import { AesGcmPayloadCodec } from './payload-codec';

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
 *
 * @param namespace the worker's or client's Temporal namespace: an {@link AesGcmPayloadCodec}
 *   bound to no namespace is bound to it (its new payloads decrypt only in that namespace).
 * @throws {@link CheckpointError} INVALID_CONFIG when the codec is bound to another namespace.
 */
export function codecDataConverter(codec: PayloadCodec | null, namespace?: string): DataConverter | undefined {
  if (codec === null) return undefined;
  let bound = codec;
  if (codec instanceof AesGcmPayloadCodec && namespace !== undefined) {
    if (codec.namespace !== null && codec.namespace !== namespace) {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `the payload codec is bound to namespace ${JSON.stringify(codec.namespace)}, and this worker or client connects to namespace ${JSON.stringify(namespace)}`,
        { field: 'payloadCodec', reason: 'namespace' },
      );
    }
    bound = codec.forNamespace(namespace);
  }
  return { payloadCodecs: [bound], failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH };
}
