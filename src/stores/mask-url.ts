/**
 * Store URLs made safe to show: configuration errors, store errors and logs
 * name the store by a masked URL that never contains a password, whatever characters the
 * password holds and however the URL is malformed.
 */

/** Query parameters whose values are shown; every other parameter's value is masked (`sslpassword`, `password`, anything unknown). */
const SHOWN_PARAMETERS = new Set([
  'sslmode',
  'host',
  'port',
  'user',
  'dbname',
  'application_name',
  'connect_timeout',
  'target_session_attrs',
  'fallback_application_name',
  'keepalives',
]);

/** Query parameters shown by name only, their values masked. */
const MASKED_PARAMETERS = new Set(['password', 'sslpassword', 'sslkey', 'sslcert', 'sslrootcert', 'ssl', 'options', 'client_encoding', 'replication']);

/** Text without a scheme shown as is: a file path (a forgotten `sqlite:` prefix), nothing that can hold `password=`. */
const PATH_LIKE = /^[\w.~/\\-]{1,1024}$/;

/**
 * `url` safe for messages and logs:
 * - `sqlite:<path>`: unchanged (a file path, no password).
 * - text without a scheme that reads as a file path (letters, digits and `. _ ~ / \ -` only):
 *   unchanged, so a forgotten `sqlite:` prefix is visible. Other text without a scheme (a libpq
 *   key/value string `host=… password=…`, text with spaces, quotes or `=`) is `***`.
 * - a `postgres://` / `postgresql://` URL that parses (WHATWG URL) with every `@` inside its
 *   user part and no fragment: rebuilt from its parts, with the password as `***` and the value
 *   of every query parameter but a few harmless ones (`sslmode`, `host`, `port`, `user`,
 *   `dbname`, `application_name`, `connect_timeout`, …) as `***`, so `password=` and
 *   `sslpassword=` never show; an unknown parameter (maybe a piece of a password holding a
 *   raw `&`) shows as `***`, name included.
 * - anything else (a URL of another scheme, a URL that does not parse, such as
 *   `postgres://user:password` without `@host`, an `@`, `?` or `#` of a password that was not
 *   percent-encoded and so split the URL elsewhere): only its scheme, as `<scheme>://***`.
 *   Where a malformed URL's password ends cannot be known, so nothing after the scheme is
 *   shown. The absence of `@`, `?` and `#` proves nothing: `postgres://app:pw` and
 *   `host=h password=pw` hold a password without them.
 */
export function maskUrl(url: string): string {
  if (typeof url !== 'string') return '***';
  if (url.startsWith('sqlite:')) return url;
  const scheme = /^([a-z][a-z0-9+.-]{0,31}):/i.exec(url)?.[1];
  // No scheme: a file path is shown; a key/value connection string (password=…) or other text is not.
  if (scheme === undefined) return PATH_LIKE.test(url) ? url : '***';
  const parsed = parseStoreUrl(url);
  if (parsed === null) return `${scheme}://***`;
  const user = parsed.username === '' ? '' : `${parsed.username}${parsed.password === '' ? '' : ':***'}@`;
  const host = `${parsed.hostname}${parsed.port === '' ? '' : `:${parsed.port}`}`;
  const query = [...parsed.searchParams.keys()].map((name) => {
    const known = name.toLowerCase();
    if (SHOWN_PARAMETERS.has(known)) return `${known}=${encodeURIComponent(parsed.searchParams.get(name) ?? '')}`;
    // An unknown name may be a piece of a password holding a raw "&": not even the name shows.
    return MASKED_PARAMETERS.has(known) ? `${known}=***` : '***';
  });
  return `${parsed.protocol}//${user}${host}${parsed.pathname}${query.length === 0 ? '' : `?${query.join('&')}`}`;
}

/**
 * A `postgres://` URL parsed, or null when it is not one whose parts are unambiguous: it does
 * not parse, it has a fragment, or an `@` outside the user part (the `@`, `/`, `?` or `#` of an
 * unencoded password moved the split). Such a URL is refused by `openCheckpointStore`.
 */
export function parseStoreUrl(url: string): URL | null {
  if (!/^postgres(ql)?:\/\//i.test(url)) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.hash !== '' || url.includes('#')) return null;
  const afterUserInfo = url.slice(url.indexOf('//') + 2).split(/[/?]/)[0]!;
  const atInAuthority = afterUserInfo.includes('@');
  const ats = url.split('@').length - 1;
  // Every @ must sit in the authority (before the first / or ?): the last one ends the user part.
  if (ats > 0 && (!atInAuthority || url.slice(url.indexOf('//') + 2 + afterUserInfo.length).includes('@'))) return null;
  return parsed;
}
