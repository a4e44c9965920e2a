/**
 * The payload codec's configuration from the environment. Keys are secrets
 * and come only from environment variables, in the formats of `src/key-material.ts`
 * (`hex:<digits>`, `base64:<text>` or bare hex; exactly 32 random bytes). Rotation mirrors the
 * store's encryption keys: the current key (`TTC_PAYLOAD_CODEC_KEY` + `TTC_PAYLOAD_CODEC_KEY_ID`)
 * encrypts, older keys listed by id in `TTC_PAYLOAD_CODEC_KEYS` (`id:key,id:key`) still decrypt.
 */
import { CheckpointError } from '../checkpoint/errors';
import { KEY_ID_PATTERN, readKeyFromEnv, readKeyringFromEnv } from '../key-material';
import { createPayloadCodec, PAYLOAD_CODEC_KEY_BYTES, type AesGcmPayloadCodec } from './payload-codec';

/** The variable holding the current codec key (32 bytes). Unset: no codec. */
export const PAYLOAD_CODEC_KEY_ENV = 'TTC_PAYLOAD_CODEC_KEY';
/** The variable holding the current codec key's id. @default {@link DEFAULT_PAYLOAD_CODEC_KEY_ID} */
export const PAYLOAD_CODEC_KEY_ID_ENV = 'TTC_PAYLOAD_CODEC_KEY_ID';
/** The variable listing older codec keys that still decrypt, `id:key,id:key`. */
export const PAYLOAD_CODEC_KEYS_ENV = 'TTC_PAYLOAD_CODEC_KEYS';
/** Id of the current codec key when `TTC_PAYLOAD_CODEC_KEY_ID` is unset. */
export const DEFAULT_PAYLOAD_CODEC_KEY_ID = 'c1';

/**
 * The payload codec the environment configures, or null when `TTC_PAYLOAD_CODEC_KEY` is unset
 * or empty (payloads go to Temporal unencrypted, as before).
 *
 * @param env @default process.env
 * @param namespace the Temporal namespace new payloads are bound to (see
 *   {@link AesGcmPayloadCodec.forNamespace}); workers and clients bind theirs when they connect.
 *   @default none
 * @throws {@link CheckpointError} INVALID_CONFIG naming the variable (never the key): a key that
 *   is not exactly 32 bytes in an accepted format or has low entropy, a malformed key id or key
 *   list, the current id listed with another key, or `TTC_PAYLOAD_CODEC_KEYS` set without
 *   `TTC_PAYLOAD_CODEC_KEY` (a decrypt-only codec would send new payloads in plaintext: refused).
 */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env, namespace?: string): AesGcmPayloadCodec | null {
  const length = { bytes: PAYLOAD_CODEC_KEY_BYTES };
  const key = readKeyFromEnv(env, PAYLOAD_CODEC_KEY_ENV, length);
  if (key === null) {
    if ((env[PAYLOAD_CODEC_KEYS_ENV] ?? '').trim() !== '') {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `${PAYLOAD_CODEC_KEYS_ENV} is set but ${PAYLOAD_CODEC_KEY_ENV} is not: older codec keys only decrypt; set the current key ${PAYLOAD_CODEC_KEY_ENV} too`,
        { field: PAYLOAD_CODEC_KEYS_ENV, reason: 'missing-current-key' },
      );
    }
    return null;
  }
  const rawId = (env[PAYLOAD_CODEC_KEY_ID_ENV] ?? '').trim();
  const keyId = rawId === '' ? DEFAULT_PAYLOAD_CODEC_KEY_ID : rawId;
  if (!KEY_ID_PATTERN.test(keyId)) {
    throw new CheckpointError('INVALID_CONFIG', `${PAYLOAD_CODEC_KEY_ID_ENV} must be 1 to 128 letters, digits, "_", "." or "-"`, {
      field: PAYLOAD_CODEC_KEY_ID_ENV,
      reason: 'key-id',
    });
  }
  const olderKeys = readKeyringFromEnv(env, PAYLOAD_CODEC_KEYS_ENV, length, { id: keyId, key, variable: PAYLOAD_CODEC_KEY_ENV });
  return createPayloadCodec({ keyId, key, olderKeys, ...(namespace !== undefined ? { namespace } : {}) });
}

/**
 * The codec the environment configures; for commands that make no sense without one
 * (`ttc codec-server`).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming `TTC_PAYLOAD_CODEC_KEY` when it is unset,
 *   and as {@link codecFromEnv}.
 */
export function requireCodecFromEnv(env: NodeJS.ProcessEnv = process.env): AesGcmPayloadCodec {
  const codec = codecFromEnv(env);
  if (codec === null) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      `${PAYLOAD_CODEC_KEY_ENV} is not set: the codec server needs the payload codec key (32 random bytes, e.g. hex:$(openssl rand -hex 32))`,
      { field: PAYLOAD_CODEC_KEY_ENV, reason: 'missing' },
    );
  }
  return codec;
}
