/**
 * The console's access token: `TTC_CONSOLE_TOKEN`, or a random one made at start (printed with
 * the console's URL). Whoever holds it can approve tool calls, so it is long, random and compared
 * in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { CheckpointError } from '../checkpoint/errors';

/** The environment variable holding a fixed console token. */
export const CONSOLE_TOKEN_ENV = 'TTC_CONSOLE_TOKEN';
/** Shortest token accepted from {@link CONSOLE_TOKEN_ENV}, in characters. */
export const MIN_CONSOLE_TOKEN_CHARS = 16;
/** Random bytes in a generated token (base64url: 43 characters). */
const GENERATED_TOKEN_BYTES = 32;

/** The token and where it came from (a token from the environment is never printed). */
export interface ConsoleToken {
  readonly token: string;
  readonly fromEnv: boolean;
}

/**
 * The token from `env.TTC_CONSOLE_TOKEN`, else a new random one (32 bytes, base64url).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG (field TTC_CONSOLE_TOKEN) when the variable is
 *   set but shorter than {@link MIN_CONSOLE_TOKEN_CHARS} characters or not printable ASCII
 *   (it goes into a URL, a cookie and a header).
 */
export function resolveConsoleToken(env: NodeJS.ProcessEnv): ConsoleToken {
  const fixed = env[CONSOLE_TOKEN_ENV];
  if (fixed === undefined || fixed === '') return { token: randomBytes(GENERATED_TOKEN_BYTES).toString('base64url'), fromEnv: false };
  if (fixed.length < MIN_CONSOLE_TOKEN_CHARS || !/^[A-Za-z0-9._~-]+$/.test(fixed)) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      `${CONSOLE_TOKEN_ENV} must be at least ${MIN_CONSOLE_TOKEN_CHARS} characters of A-Z a-z 0-9 . _ ~ - (it goes into a URL and a cookie); got ${fixed.length} characters. Unset it to get a random token printed at start`,
      { field: CONSOLE_TOKEN_ENV, limit: MIN_CONSOLE_TOKEN_CHARS, actual: fixed.length },
    );
  }
  return { token: fixed, fromEnv: true };
}

/**
 * True when `presented` equals `expected`, in time independent of where they differ (both are
 * hashed to SHA-256 first, so their lengths leak nothing either).
 */
export function tokensEqual(presented: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
