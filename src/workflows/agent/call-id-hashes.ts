/**
 * The call ids a run chain has used, carried across continue-as-new in a fixed 8 characters per
 * call whatever an id's length (the handover must stay bounded): the 32-bit FNV-1a hash
 * of each id, as 8 lower-case hex digits, concatenated. A hash that matches is treated as used;
 * a rare false match only gives a call a turn-scoped id it did not need (`<id>_t<turn>`), never
 * lets two calls share a checkpoint. Pure and sandbox-safe.
 */

/** Hex digits per id in {@link packCallIdHashes}. */
export const CALL_ID_HASH_CHARS = 8;

/** FNV-1a (32 bits) over the id's UTF-16 code units, as 8 hex digits. */
export function callIdHash(callId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < callId.length; i += 1) {
    hash ^= callId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(CALL_ID_HASH_CHARS, '0');
}

/** The hashes in a packed string (what {@link packCallIdHashes} wrote). */
export function unpackCallIdHashes(packed: string): Set<string> {
  const hashes = new Set<string>();
  for (let at = 0; at + CALL_ID_HASH_CHARS <= packed.length; at += CALL_ID_HASH_CHARS) hashes.add(packed.slice(at, at + CALL_ID_HASH_CHARS));
  return hashes;
}

/** Packs hashes (each {@link CALL_ID_HASH_CHARS} hex digits) into one string. */
export function packCallIdHashes(hashes: Iterable<string>): string {
  return [...hashes].join('');
}
