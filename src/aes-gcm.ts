/**
 * AES-256-GCM, the one primitive both encryptions use: the side store's payload and text
 * envelopes (`stores/payload-cipher.ts`) and the Temporal payload codec (`codec/payload-codec.ts`).
 * 12-byte random IVs and full 16-byte tags only (NIST SP 800-38D §5.2.1.1, §5.2.1.2); callers
 * check lengths of what they read and bind their context (key id, row, field) as additional data.
 * Node side.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** AES-GCM IV length, bytes. */
export const GCM_IV_BYTES = 12;
/** AES-GCM authentication tag length, bytes (never truncated). */
export const GCM_TAG_BYTES = 16;

/** Encrypts `plaintext` (UTF-8 for a string) under a 32-byte `key` with a fresh random IV, binding `aad`. */
export function gcmSeal(key: Uint8Array, plaintext: Uint8Array | string, aad: Uint8Array): { iv: Buffer; ct: Buffer; tag: Buffer } {
  const iv = randomBytes(GCM_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
  cipher.setAAD(aad);
  const ct = Buffer.concat([typeof plaintext === 'string' ? cipher.update(plaintext, 'utf8') : cipher.update(plaintext), cipher.final()]);
  return { iv, ct, tag: cipher.getAuthTag() };
}

/**
 * Decrypts what {@link gcmSeal} wrote. The caller has checked that `iv` is {@link GCM_IV_BYTES}
 * and `tag` {@link GCM_TAG_BYTES} long.
 *
 * @throws the cipher's error for a wrong key, altered data or different `aad` (callers wrap it as DECRYPTION_FAILED).
 */
export function gcmOpen(key: Uint8Array, iv: Uint8Array, ct: Uint8Array, tag: Uint8Array, aad: Uint8Array): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ct), decipher.final()]);
}
