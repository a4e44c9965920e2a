/**
 * Key material from configuration text: one strict format, exact lengths and a
 * low-entropy check, with errors that name the variable and never the key. Used by
 * `src/config.ts` for the seal, encryption and idempotency-key secrets, and by the Temporal
 * payload codec for its own key variables.
 *
 * Accepted text (surrounding whitespace, such as the trailing newline of `$(cat key.txt)`, is
 * trimmed first; whitespace inside is refused):
 * - `hex:<digits>`: hexadecimal, an even number of digits, upper or lower case.
 * - `base64:<text>`: RFC 4648 §4 base64 with its `=` padding, or §5 base64url without padding;
 *   canonical only (the text must be exactly what re-encoding the bytes gives, so no stray
 *   padding, no mixed alphabets, no ignored trailing bits).
 * - bare `<digits>`: hexadecimal as above (the format earlier versions documented; the bytes are
 *   the same as before). Bare base64 is refused: earlier versions decoded any text that was not
 *   even-length hex as lenient base64, so a hex key with a typo or a `0x` prefix silently became
 *   another key. Write it as `base64:<text>`.
 *
 * Low entropy is refused: keys must be random bytes (`openssl rand -hex 32`). A key with fewer
 * than {@link MIN_DISTINCT_KEY_BYTES} distinct byte values (all zeros, a repeated byte, a short
 * repeated pattern) or made only of printable ASCII (a passphrase encoded as a key) is refused.
 * For 32 random bytes either happens with probability below 1e-13.
 */
import { CheckpointError } from './checkpoint/errors';

/** Fewer distinct byte values than this is refused as low entropy (32 random bytes have about 30). */
export const MIN_DISTINCT_KEY_BYTES = 16;

/** A key id: 1 to 128 letters, digits, `_`, `.` or `-`. */
export const KEY_ID_PATTERN = /^[\w.-]{1,128}$/;

/** Length rule of {@link parseKeyMaterial}: exactly `bytes`, or at least `minBytes` (and at most `maxBytes`). */
export type KeyLength = { readonly bytes: number } | { readonly minBytes: number; readonly maxBytes?: number };

/** Why {@link parseKeyMaterial} refused a key, as `details.reason` of its INVALID_CONFIG error. */
export type KeyMaterialProblem = 'format' | 'length' | 'low-entropy';

/** Largest key accepted when only a minimum is given, in bytes. */
const DEFAULT_MAX_KEY_BYTES = 1024;
/** Key ids up to this length are named in errors; longer ones could be key text (a 32-byte key is at least 43 characters). */
const SHOWN_ID_LENGTH = 32;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Decodes one key from configuration text (see the module comment for the formats).
 *
 * @param variable the environment variable (or config key) the text came from; named in errors.
 * @param raw the text as configured.
 * @param length exact (`{ bytes: 32 }`, AES-256) or minimum (`{ minBytes: 32 }`, HMAC) length in bytes.
 * @param what optional words naming the key inside `variable` (e.g. `key id "k1"`), for key lists.
 * @returns the key bytes (a new Buffer).
 * @throws {@link CheckpointError} INVALID_CONFIG with `details.field` = `variable` and
 *   `details.reason` a {@link KeyMaterialProblem}; neither message nor details contain the key.
 */
export function parseKeyMaterial(variable: string, raw: string, length: KeyLength, what = ''): Buffer {
  const fail = (reason: KeyMaterialProblem, message: string): CheckpointError =>
    new CheckpointError('INVALID_CONFIG', `${variable} ${what === '' ? '' : `${what} `}${message}`, { field: variable, reason });
  if (typeof raw !== 'string') throw fail('format', 'must be text');
  const text = raw.trim();
  let key: Buffer;
  if (text.startsWith('hex:')) {
    const digits = text.slice(4);
    if (!HEX.test(digits)) throw fail('format', `${hexProblem(digits)} after "hex:"`);
    key = Buffer.from(digits, 'hex');
  } else if (text.startsWith('base64:')) {
    const encoded = text.slice(7);
    key =
      decodeBase64(encoded) ??
      (() => {
        throw fail('format', 'must be canonical base64 (with = padding) or base64url (without padding) after "base64:"');
      })();
  } else if (HEX.test(text)) {
    key = Buffer.from(text, 'hex');
  } else if (/^[0-9a-fA-F]+$/.test(text)) {
    throw fail('format', `${hexProblem(text)} (base64 needs the "base64:" prefix)`);
  } else {
    throw fail(
      'format',
      'must be hex digits ("hex:" prefix optional) or "base64:" followed by base64; other text (a "0x" prefix, an odd number of digits, bare base64) is refused',
    );
  }
  const min = 'bytes' in length ? length.bytes : length.minBytes;
  const max = 'bytes' in length ? length.bytes : (length.maxBytes ?? DEFAULT_MAX_KEY_BYTES);
  if (key.length < min || key.length > max) {
    const rule = min === max ? `exactly ${min}` : key.length < min ? `at least ${min}` : `at most ${max}`;
    throw fail('length', `must hold ${rule} bytes, got ${key.length} bytes`);
  }
  if (new Set(key).size < MIN_DISTINCT_KEY_BYTES) {
    throw fail(
      'low-entropy',
      `has fewer than ${MIN_DISTINCT_KEY_BYTES} distinct byte values (all zeros, a repeated byte or pattern): use random bytes, e.g. openssl rand -hex ${min}`,
    );
  }
  if (PRINTABLE_ASCII.test(key.toString('latin1'))) {
    throw fail('low-entropy', `decodes to printable text only (a passphrase, not random bytes): use random bytes, e.g. openssl rand -hex ${min}`);
  }
  return key;
}

/**
 * Why `digits` is not an even number of hex digits, naming only positions and counts (never
 * the text): empty, whitespace inside, a character that is not a hex digit (its 1-based
 * position), or an odd number of digits.
 */
function hexProblem(digits: string): string {
  if (digits.length === 0) return 'has no hex digits';
  const bad = digits.search(/[^0-9a-fA-F]/);
  if (bad >= 0) {
    const what = /\s/.test(digits[bad]!) ? 'whitespace' : 'a character that is not a hex digit (0-9, a-f, A-F)';
    return `has ${what} at position ${bad + 1} of its hex digits`;
  }
  return `must be an even number of hex digits, got ${digits.length} digits`;
}

/** The bytes of canonical base64 or base64url text, or null when it is neither. */
function decodeBase64(text: string): Buffer | null {
  if (text.length === 0) return null;
  if (BASE64.test(text)) {
    const bytes = Buffer.from(text, 'base64');
    return bytes.toString('base64') === text ? bytes : null;
  }
  if (BASE64URL.test(text)) {
    const bytes = Buffer.from(text, 'base64url');
    return bytes.toString('base64url') === text ? bytes : null;
  }
  return null;
}

/** The current key of a keyring, which an entry with the same id must match. */
export interface CurrentKey {
  readonly id: string;
  readonly key: Uint8Array;
  /** The variable the current key came from, named in the error. */
  readonly variable: string;
}

/**
 * Parses a key list `id:key,id:key` (whitespace around entries ignored; each key as for
 * {@link parseKeyMaterial}). Empty or whitespace-only text is an empty list.
 *
 * @param current the current key: an entry with its id must hold the same key.
 * @returns keys by id, in listed order.
 * @throws {@link CheckpointError} INVALID_CONFIG naming `variable` (never a key) for an entry
 *   without `:`, a malformed id (see {@link KEY_ID_PATTERN}), an empty or invalid key, an id
 *   listed twice, or the current id listed with another key.
 */
export function parseKeyring(variable: string, raw: string, length: KeyLength, current: CurrentKey | null = null): Record<string, Buffer> {
  const fail = (reason: string, message: string): CheckpointError => new CheckpointError('INVALID_CONFIG', `${variable} ${message}`, { field: variable, reason });
  const keys = new Map<string, Buffer>();
  if (raw.trim() === '') return {};
  raw.split(',').forEach((entry, index) => {
    const item = entry.trim();
    const colon = item.indexOf(':');
    if (colon < 0) throw fail('format', `entry ${index + 1} must be id:key (entries separated by commas), got an entry without ":"`);
    const id = item.slice(0, colon).trim();
    const material = item.slice(colon + 1).trim();
    // An id is shown only when it is too short to be a key (an entry written key:id must not echo the key).
    const name = id.length <= SHOWN_ID_LENGTH ? `key id ${JSON.stringify(id)}` : `entry ${index + 1}`;
    if (!KEY_ID_PATTERN.test(id)) throw fail('key-id', `${name} has a malformed key id; a key id is 1 to 128 letters, digits, "_", "." or "-"`);
    if (id === 'hex' || id === 'base64') throw fail('key-id', `entry ${index + 1} has no key id (it starts with the key's "${id}:" prefix); write id:${id}:<key>`);
    if (material === '') throw fail('format', `${name} has no key`);
    const key = parseKeyMaterial(variable, material, length, name);
    if (keys.has(id)) throw fail('duplicate-id', `lists ${name} twice`);
    if (current !== null && id === current.id && !key.equals(current.key)) {
      throw fail('current-id', `lists ${name} with another key than ${current.variable} (the current key has that id)`);
    }
    keys.set(id, key);
  });
  return Object.fromEntries(keys);
}

/**
 * Reads one key from `env[variable]`: null when unset or empty, else {@link parseKeyMaterial}.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG as {@link parseKeyMaterial}.
 */
export function readKeyFromEnv(env: NodeJS.ProcessEnv, variable: string, length: KeyLength): Buffer | null {
  const raw = env[variable];
  if (raw === undefined || raw.trim() === '') return null;
  return parseKeyMaterial(variable, raw, length);
}

/**
 * Reads a key list from `env[variable]` ({@link parseKeyring}); unset is an empty list.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG as {@link parseKeyring}.
 */
export function readKeyringFromEnv(env: NodeJS.ProcessEnv, variable: string, length: KeyLength, current: CurrentKey | null = null): Record<string, Buffer> {
  return parseKeyring(variable, env[variable] ?? '', length, current);
}
