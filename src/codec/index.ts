/**
 * `temporal-tool-checkpoint/codec`: AES-256-GCM for everything Temporal stores (a payload codec,
 * its data converter and failure converter, the agent workflow bundle that uses them) and the
 * codec server Temporal's UI and CLI call to read encrypted payloads.
 */
export {
  AesGcmPayloadCodec,
  createPayloadCodec,
  isEncryptedTemporalPayload,
  PAYLOAD_CODEC_ENCODING,
  PAYLOAD_CODEC_IV_BYTES,
  PAYLOAD_CODEC_KEY_BYTES,
  PAYLOAD_CODEC_KEY_ID_METADATA,
  PAYLOAD_CODEC_TAG_BYTES,
} from './payload-codec';
export type { PayloadCodecKeys } from './payload-codec';
export { codecFromEnv, requireCodecFromEnv, PAYLOAD_CODEC_KEY_ENV, PAYLOAD_CODEC_KEY_ID_ENV, PAYLOAD_CODEC_KEYS_ENV, DEFAULT_PAYLOAD_CODEC_KEY_ID } from './codec-config';
export { codecDataConverter, ENCODED_FAILURE_CONVERTER_PATH } from './data-converter';
export { buildAgentWorkflowBundle, assertWorkflowBundleEncodesFailures } from './workflow-bundle';
export type { AgentWorkflowBundleOptions } from './workflow-bundle';
export { startCodecServer, parseCorsOrigin, DEFAULT_CODEC_SERVER_PORT, DEFAULT_CODEC_SERVER_HOST, MAX_CODEC_REQUEST_BYTES } from './codec-server';
export type { CodecServerOptions, RunningCodecServer } from './codec-server';
