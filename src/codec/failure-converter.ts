/**
 * The failure converter of workers and clients that use the payload codec.
 *
 * Temporal's default failure converter keeps a failure's `message` and `stack_trace` in plaintext
 * beside the (encrypted) payloads, so a tool's or a provider's error text (an unknown outcome's
 * reason, a model provider's refusal) would reach Temporal history readable. This one is the
 * default converter with `encodeCommonAttributes: true`: both move into the failure's
 * `encodedAttributes` payload, which the codec encrypts like every other payload; history keeps
 * `message: "Encoded failure"` and an empty stack trace. Any client decodes them back (the default
 * converter reads `encodedAttributes` too), given the codec's keys.
 *
 * Temporal loads it by path (`dataConverter.failureConverterPath`) in the worker, the client and
 * the workflow sandbox (the bundler includes it), so this module is sandbox-safe: it imports only
 * `@temporalio/common`. A prebuilt workflow bundle must be built with it (see `./workflow-bundle`).
 */
import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Text carried by this module, so a prebuilt workflow bundle can be checked for it: a bundle built
 * with this failure converter contains it, one built without does not. Never change it.
 */
export const ENCODED_FAILURE_CONVERTER_MARKER = 'ttc-encoded-failure-converter/v1';

/** The default failure converter with `encodeCommonAttributes: true`, carrying {@link ENCODED_FAILURE_CONVERTER_MARKER}. */
class EncodedFailureConverter extends DefaultFailureConverter {
  /** {@link ENCODED_FAILURE_CONVERTER_MARKER}, kept as a property so the bundler keeps the text. */
  readonly marker: string = ENCODED_FAILURE_CONVERTER_MARKER;

  constructor() {
    super({ encodeCommonAttributes: true });
  }
}

/** The `failureConverter` export Temporal loads from `failureConverterPath`. */
export const failureConverter = new EncodedFailureConverter();
