/**
 * The approval console as a browser or a script meets it, for the console's tests: one raw HTTP
 * request with exactly the given headers (fetch would not send a chosen Host or Origin), and the
 * page's forms with their hidden fields decoded as a browser submits them.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

/** One response, with its `Set-Cookie` lines raw and parsed. */
export interface ConsoleResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The `Set-Cookie` lines as sent. */
  readonly setCookies: string[];
  /** Each cookie's name, value and attributes (`Path=/; HttpOnly; …`). */
  readonly cookies: readonly { name: string; value: string; attributes: string }[];
}

/** Sends one request to the console on 127.0.0.1:`port`. */
export function send(port: number, method: string, path: string, headers: Record<string, string | string[]>, body?: string | Buffer): Promise<ConsoleResponse> {
  return new Promise((done, fail) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const setCookies = res.headers['set-cookie'] ?? [];
          const cookies = setCookies.map((line) => {
            const [pair, ...attributes] = line.split('; ');
            const at = pair!.indexOf('=');
            return { name: pair!.slice(0, at), value: pair!.slice(at + 1), attributes: attributes.join('; ') };
          });
          done({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text, setCookies, cookies });
        });
      },
    );
    req.on('error', fail);
    // A Buffer body: Node then writes the header block alone, each character of a header value as one (Latin-1) byte.
    req.end(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  });
}

/**
 * Logs in through the login form as a browser does: GET /login (the CSRF secret cookie and the
 * form's `_csrf`), then POST /login with the token from the console's own origin. Returns the
 * token cookie as a `Cookie` header (the next page sets the CSRF secret of its forms).
 */
export async function logIn(port: number, host: string, token: string): Promise<string> {
  const form = await send(port, 'GET', '/login', { host });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (form.statusCode !== 200 || csrf === undefined) throw new Error(`no login form (${form.statusCode}): ${form.body.slice(0, 500)}`);
  const csrfCookie = cookiesOf(form);
  const login = await send(
    port,
    'POST',
    '/login',
    { host, origin: `http://${host}`, cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ _csrf: decodeAttribute(csrf), token }).toString(),
  );
  if (login.statusCode !== 303) throw new Error(`the login form refused the token (${login.statusCode}): ${login.body.slice(0, 500)}`);
  return cookiesOf(login);
}

/** The `Cookie` header a browser sends back after `response` (name=value pairs). */
export function cookiesOf(response: Pick<ConsoleResponse, 'setCookies'>): string {
  return response.setCookies.map((c) => c.split(';')[0]).join('; ');
}

/** An attribute value as an HTML parser reads it: character references decoded; any other `&name;` throws (the console writes only these). */
export function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref.startsWith('#x') || ref.startsWith('#X')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(Number(ref.slice(1)));
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'" };
    if (named[ref] === undefined) throw new Error(`unexpected character reference ${whole}`);
    return named[ref]!;
  });
}

/** A form of the page: its action and its hidden fields, as a browser submits them. */
export interface PageForm {
  readonly action: string;
  readonly fields: Record<string, string>;
}

/** Every form of `page` in document order, or only those of the run `workflowId`'s section. */
export function formsOf(page: string, workflowId?: string): PageForm[] {
  const parts = workflowId === undefined ? [page] : page.split('<section class="run"').filter((s) => s.includes(`data-workflow-id="${workflowId}"`));
  return parts.flatMap((part) =>
    [...part.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => ({
      action: m[1]!,
      fields: Object.fromEntries([...m[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((f) => [f[1]!, decodeAttribute(f[2]!)])),
    })),
  );
}
