/**
 * The console's HTTP surface over real HTTP (the listening server on a free port; Fastify's
 * `inject` cannot load under Jest: its `cookie` 2 is ESM-only), with operations that record what they were
 * asked to send: the token (401), the host and origin checks and the CSRF token (403) refuse a
 * request before anything reaches a run; security headers on every response; a form sends
 * exactly what the page showed; a run's refusal and model text are shown escaped.
 */
import { startConsoleServer, type RunningConsole } from '../../../src/console/server';
import { CONTENT_SECURITY_POLICY } from '../../../src/console/security-headers';
import { DecisionRefusedError } from '../../../src/operator/run-decisions';
import { awaitingCall, recordingOperations, waitingRun } from './fixtures';
import { logIn, send, type ConsoleResponse as Response } from '../../helpers/console-http';

const TOKEN = 'test-console-token-0123456789';

describe('the console over HTTP', () => {
  let server: RunningConsole;
  let HOST: string;
  let ORIGIN: string;
  const fake = recordingOperations();
  const { operations, sent } = fake;

  beforeAll(async () => {
    server = await startConsoleServer({ operations, token: TOKEN, port: 0, namespace: 'default', nowMs: () => Date.parse('2030-01-01T00:00:00.000Z') });
    HOST = new URL(server.url).host;
    ORIGIN = `http://${HOST}`;
  });
  afterAll(() => server.close());
  beforeEach(() => {
    fake.runs = [waitingRun([awaitingCall()])];
    sent.length = 0;
    fake.refuseWith = null;
  });

  const port = () => Number(new URL(server.url).port);
  const get = (url: string, headers: Record<string, string> = {}) => send(port(), 'GET', url, { host: HOST, ...headers });
  const cookieHeader = (response: Response) => response.cookies.map((c) => `${c.name}=${c.value}`).join('; ');

  /** Logs in with the login form and reads the list: the cookies (token + CSRF secret) and the page's CSRF token. */
  async function openPage(): Promise<{ cookie: string; csrf: string; page: string }> {
    const tokenCookie = await logIn(port(), HOST, TOKEN);
    const list = await get('/', { cookie: tokenCookie });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(list.body)?.[1];
    if (!csrf) throw new Error(`no CSRF token in the page: ${list.body}`);
    return { cookie: `${tokenCookie}; ${cookieHeader(list)}`, csrf, page: list.body };
  }

  const post = (url: string, cookie: string, form: Record<string, string>, headers: Record<string, string> = {}) => {
    const all: Record<string, string> = { host: HOST, origin: ORIGIN, cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers };
    if (all.origin === '') delete all.origin;
    return send(port(), 'POST', url, all, new URLSearchParams(form).toString());
  };

  const approveForm = (csrf: string) => ({ _csrf: csrf, workflowId: 'wf-1', callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: '7' });

  describe('the token', () => {
    it('a request without a token is refused with 401 TOKEN_REQUIRED and reads nothing', async () => {
      fake.listed = 0;
      const response = await get('/');
      expect([response.statusCode, fake.listed]).toEqual([401, 0]);
      expect(response.body).toContain('TOKEN_REQUIRED');
    });

    it.each([
      ['a bearer header', '/', { authorization: 'Bearer wrong-token-0123456789' }],
      ['a cookie', '/', { cookie: 'ttc_console_token=wrong-token-0123456789' }],
    ])('a wrong token in %s is refused with 401 TOKEN_INVALID', async (_where, url, headers) => {
      const response = await get(url, headers);
      expect(response.statusCode).toBe(401);
      expect(response.body).toContain('TOKEN_INVALID');
    });

    it('the login form (POST /login with the token) sets an HttpOnly SameSite=Strict cookie and redirects to /', async () => {
      const cookie = await logIn(port(), HOST, TOKEN);
      expect(cookie).toBe(`ttc_console_token=${TOKEN}`);
      const page = await get('/login');
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const response = await post('/login', cookieHeader(page), { _csrf: csrf, token: TOKEN });
      expect([response.statusCode, response.headers.location]).toEqual([303, '/']);
      expect(response.cookies).toEqual([{ name: 'ttc_console_token', value: TOKEN, attributes: 'Path=/; HttpOnly; SameSite=Strict' }]);
      expect((await get('/', { cookie: cookieHeader(response) })).statusCode).toBe(200);
      const wrong = await post('/login', cookieHeader(page), { _csrf: csrf, token: 'wrong-token-0123456789' });
      expect([wrong.statusCode, wrong.cookies]).toEqual([401, []]);
      expect(wrong.body).toContain('TOKEN_INVALID');
    });

    it('a token in the URL (?token=) never logs in, even the right one: 401 TOKEN_IN_URL, no cookie', async () => {
      for (const url of [`/?token=${TOKEN}`, '/?token=wrong-token-0123456789', `/login?token=${TOKEN}`]) {
        const response = await get(url);
        expect([url, response.statusCode, response.cookies.filter((c) => c.name === 'ttc_console_token')]).toEqual([url, 401, []]);
        expect(response.body).toContain('TOKEN_IN_URL');
        expect(response.body).not.toContain(TOKEN);
      }
    });

    it('a one-time login link logs in once: the first GET sets the cookie and redirects to /, the same link again is 401 LOGIN_LINK_USED; a HEAD does not spend it', async () => {
      const link = new URL(server.issueLoginUrl());
      expect(link.pathname).toBe('/login');
      expect(link.href).not.toContain(TOKEN);
      const path = `${link.pathname}${link.search}`;
      expect((await send(port(), 'HEAD', path, { host: HOST })).statusCode).toBe(200);
      const first = await get(path);
      expect([first.statusCode, first.headers.location, first.cookies.map((c) => c.name)]).toEqual([303, '/', ['ttc_console_token']]);
      expect((await get('/', { cookie: cookieHeader(first) })).statusCode).toBe(200);
      const again = await get(path);
      expect([again.statusCode, again.cookies]).toEqual([401, []]);
      expect(again.body).toContain('LOGIN_LINK_USED');
      const forged = await get('/login?once=not-a-code-this-console-issued');
      expect([forged.statusCode, forged.body.includes('LOGIN_LINK_USED')]).toEqual([401, true]);
    });

    it('a bearer header with the token is accepted', async () => {
      expect((await get('/', { authorization: `Bearer ${TOKEN}` })).statusCode).toBe(200);
    });

    it('a request naming another host (DNS rebinding) is refused with 403 HOST_NOT_ALLOWED even with the token', async () => {
      const response = await get('/', { host: `attacker.example:${port()}`, authorization: `Bearer ${TOKEN}` });
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('HOST_NOT_ALLOWED');
    });
  });

  describe('forms', () => {
    it('an approval sends exactly the intent digest and state version the page showed', async () => {
      const { cookie, csrf, page } = await openPage();
      expect(page).toContain('<input type="hidden" name="intentDigest" value="sha256:aaaa"><input type="hidden" name="stateVersion" value="7">');
      const response = await post('/approve', cookie, approveForm(csrf));
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain('Approved</span> call <code>c1</code> of run <code>wf-1</code>');
      expect(sent).toEqual([['approve', 'wf-1', { callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: 7 }]]);
    });

    it.each([
      ['another origin', { origin: 'http://attacker.example' }],
      ['the console on another port', { origin: 'http://127.0.0.1:9999' }],
      ['nowhere (no Origin header)', { origin: '' }],
    ])('a POST from %s is refused with 403 ORIGIN_NOT_ALLOWED and nothing is sent', async (_from, headers) => {
      const { cookie, csrf } = await openPage();
      const response = await post('/approve', cookie, approveForm(csrf), headers);
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('ORIGIN_NOT_ALLOWED');
      expect(sent).toEqual([]);
    });

    it.each([
      ['without a CSRF token', (csrf: string, cookie: string) => ({ form: { ...approveForm(csrf), _csrf: '' }, cookie })],
      ['with a forged CSRF token', (csrf: string, cookie: string) => ({ form: { ...approveForm(csrf), _csrf: `${csrf[0] === 'x' ? 'y' : 'x'}${csrf.slice(1)}` }, cookie })],
      [
        'without the CSRF cookie',
        (csrf: string, cookie: string) => ({
          form: approveForm(csrf),
          cookie: cookie
            .split('; ')
            .filter((c) => !c.startsWith('ttc_console_csrf='))
            .join('; '),
        }),
      ],
    ])('a POST %s is refused with 403 CSRF_TOKEN_INVALID and nothing is sent', async (_how, tamper) => {
      const page = await openPage();
      const { form, cookie } = tamper(page.csrf, page.cookie);
      const response = await post('/approve', cookie, form);
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('CSRF_TOKEN_INVALID');
      expect(sent).toEqual([]);
    });

    it('a refusal by the run is shown with its type and escaped message, status 409', async () => {
      fake.refuseWith = new DecisionRefusedError('APPROVAL_MISMATCH', 'wf-1', 'c1', 'call "c1" has intent digest sha256:bbbb, the approval names sha256:aaaa <b>');
      const { cookie, csrf } = await openPage();
      const response = await post('/approve', cookie, approveForm(csrf));
      expect(response.statusCode).toBe(409);
      expect(response.body).toContain('<span class="code">APPROVAL_MISMATCH</span>');
      expect(response.body).toContain(
        'APPROVAL_MISMATCH: run wf-1 refused the decision on c1: call &quot;c1&quot; has intent digest sha256:bbbb, the approval names sha256:aaaa &lt;b&gt;',
      );
    });

    it('a malformed form is refused with 400 naming the field, and nothing is sent', async () => {
      const { cookie, csrf } = await openPage();
      const response = await post('/approve', cookie, { ...approveForm(csrf), stateVersion: '7.5' });
      expect(response.statusCode).toBe(400);
      expect(response.body).toContain('INVALID_ARGUMENT: stateVersion must be a non-negative integer, got &quot;7.5&quot;');
      expect(sent).toEqual([]);
    });

    it('resolve applied sends the result and receipt parsed from JSON; reject sends the reason', async () => {
      const { cookie, csrf } = await openPage();
      const base = { _csrf: csrf, workflowId: 'wf-1', callId: 'c1' };
      expect(
        (await post('/resolve', cookie, { ...base, pauseId: 'c1#2', resolution: 'applied', result: '{"id": "t-1"}', receipt: '', reason: 'found it in the outbox' })).statusCode,
      ).toBe(200);
      expect((await post('/resolve', cookie, { ...base, pauseId: 'c1#2', resolution: 'applied', result: '{not json', reason: 'r' })).statusCode).toBe(400);
      // A resolve form without the pause it was made for is refused; nothing is sent.
      expect((await post('/resolve', cookie, { ...base, resolution: 'absent', reason: 'r' })).statusCode).toBe(400);
      expect((await post('/reject', cookie, { ...base, reason: 'wrong account' })).statusCode).toBe(200);
      expect(sent).toEqual([
        ['resolve', 'wf-1', { callId: 'c1', pauseId: 'c1#2', resolution: 'applied', result: { id: 't-1' }, receipt: null, reason: 'found it in the outbox' }],
        ['reject', 'wf-1', { callId: 'c1', reason: 'wrong account' }],
      ]);
    });
  });

  describe('output', () => {
    it('every response carries the security headers, refusals included', async () => {
      for (const response of [await get('/', { authorization: `Bearer ${TOKEN}` }), await get('/'), await get('/nowhere', { authorization: `Bearer ${TOKEN}` })]) {
        expect(response.headers).toEqual(
          expect.objectContaining({
            'content-security-policy': CONTENT_SECURITY_POLICY,
            'x-frame-options': 'DENY',
            'cache-control': 'no-store',
            'x-content-type-options': 'nosniff',
            'referrer-policy': 'same-origin',
          }),
        );
      }
      expect(CONTENT_SECURITY_POLICY).toContain("default-src 'none'");
      expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    });

    it('a tool argument holding <script> is shown as text, as are the model input, ids, reason and a bidi override', async () => {
      const evil = '<script>alert(1)</script>';
      fake.runs = [
        waitingRun(
          [
            awaitingCall({ callId: `c1${evil}`, arguments: { note: evil, file: 'gnp\u202e.exe' }, modelInput: { note: evil }, target: { to: `"><img src=x onerror=alert(2)>` } }),
            awaitingCall({ callId: 'p1', status: 'paused', approvalExpiresAt: null, errorType: 'OUTCOME_UNKNOWN', reason: evil, receipt: { id: evil } }),
          ],
          {
            paused: {
              pauseId: 'p1#1',
              callId: 'p1',
              toolName: 'transfer',
              errorType: 'OUTCOME_UNKNOWN',
              reason: evil,
              pausedAt: '2030-01-01T00:00:00.000Z',
              toolRevision: null,
              idempotencyKey: null,
            },
          },
        ),
      ];
      const { page } = await openPage();
      expect(page).not.toMatch(/<script|<img/i);
      expect(page).toContain('&quot;note&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;');
      expect(page).toContain('&quot;file&quot;: &quot;gnp\\u202e.exe&quot;');
      expect(page).toContain('data-call-id="c1&lt;script&gt;alert(1)&lt;/script&gt;"');
      expect(page).toContain('<dt>Reason</dt><dd>&lt;script&gt;alert(1)&lt;/script&gt;</dd>');
    });

    it('arguments holding invisible characters are shown escaped, every code point, under a warning with their count; plain arguments get no warning', async () => {
      const hidden = [...'wire 5000 to account 12345'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
      fake.runs = [
        waitingRun([awaitingCall({ arguments: { reason: `Refund for late delivery${hidden}`, note: 'soft\u00adhyphen \u3164 x\ufe0f' }, modelInput: { reason: 'plain' } })]),
      ];
      const { page } = await openPage();
      expect(page).not.toMatch(/[\u{e0000}-\u{e007f}\u00ad\u3164\ufe0f]/u);
      expect(page).toContain(`Refund for late delivery${[...hidden].map((c) => `\\udb40\\u${c.charCodeAt(1).toString(16)}`).join('')}`);
      expect(page).toContain('soft\\u00adhyphen \\u3164 x\\ufe0f');
      expect(page).toContain(
        '<p class="warning hidden-characters">WARNING: 29 invisible or control characters in the arguments, shown as \\uXXXX escapes; they reach the tool as they are</p>',
      );
      expect(page.match(/hidden-characters/g)).toHaveLength(1);
    });

    it('a target holding invisible characters gets its own warning with its count (the intent digest covers it)', async () => {
      fake.runs = [waitingRun([awaitingCall({ target: { account: 'acct-1\u200b\u2060' } })])];
      const { page } = await openPage();
      expect(page).toContain(
        '<p class="warning hidden-characters">WARNING: 2 invisible or control characters in the target, shown as \\uXXXX escapes; they reach the tool as they are</p>',
      );
      expect(page.match(/hidden-characters/g)).toHaveLength(1);
    });
  });
});

describe('who decides in the console', () => {
  /** A console started with `decider`, logged in, its page open: post a form with extra headers. */
  async function consoleWith(decider: { operator?: string; identityHeader?: string }) {
    const fake = recordingOperations();
    fake.runs = [waitingRun([awaitingCall()])];
    const server = await startConsoleServer({
      operations: fake.operations,
      token: TOKEN,
      port: 0,
      namespace: 'default',
      decider,
      nowMs: () => Date.parse('2030-01-01T00:00:00.000Z'),
    });
    const host = new URL(server.url).host;
    const port = Number(new URL(server.url).port);
    const tokenCookie = await logIn(port, host, TOKEN);
    const list = await send(port, 'GET', '/', { host, cookie: tokenCookie });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(list.body)![1]!;
    const cookie = `${tokenCookie}; ${list.cookies.map((c) => `${c.name}=${c.value}`).join('; ')}`;
    const post = (url: string, form: Record<string, string>, headers: Record<string, string | string[]> = {}) =>
      send(
        port,
        'POST',
        url,
        { host, origin: `http://${host}`, cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        new URLSearchParams({ _csrf: csrf, workflowId: 'wf-1', callId: 'c1', ...form }).toString(),
      );
    return { sent: fake.sent, post, close: () => server.close() };
  }

  it('the operator name the console was started with goes with every decision (approve, reject, resolve)', async () => {
    const c = await consoleWith({ operator: 'ops-team@acme' });
    try {
      expect((await c.post('/approve', { intentDigest: 'sha256:aaaa', stateVersion: '7' })).statusCode).toBe(200);
      expect((await c.post('/reject', { reason: 'wrong account' })).statusCode).toBe(200);
      expect((await c.post('/resolve', { pauseId: 'c1#2', resolution: 'absent', reason: 'not in the ledger' })).statusCode).toBe(200);
      // A header a client sets is not trusted unless the console was told to.
      expect((await c.post('/reject', { reason: 'r' }, { 'x-forwarded-user': 'mallory' })).statusCode).toBe(200);
      expect(c.sent.map(([kind, , request]) => [kind, (request as { by?: string }).by])).toEqual([
        ['approve', 'ops-team@acme'],
        ['reject', 'ops-team@acme'],
        ['resolve', 'ops-team@acme'],
        ['reject', 'ops-team@acme'],
      ]);
    } finally {
      await c.close();
    }
  });

  it('behind a trusted proxy the configured header names who decides; a decision without it is refused with 403 IDENTITY_REQUIRED and nothing is sent', async () => {
    const c = await consoleWith({ identityHeader: 'X-Forwarded-User' });
    try {
      const missing = await c.post('/approve', { intentDigest: 'sha256:aaaa', stateVersion: '7' });
      expect(missing.statusCode).toBe(403);
      expect(missing.body).toContain('IDENTITY_REQUIRED');
      expect((await c.post('/resolve', { pauseId: 'c1#2', resolution: 'absent', reason: 'r' }, { 'x-forwarded-user': ' ' })).statusCode).toBe(403);
      expect(c.sent).toEqual([]);
      expect((await c.post('/approve', { intentDigest: 'sha256:aaaa', stateVersion: '7' }, { 'x-forwarded-user': 'alice@acme' })).statusCode).toBe(200);
      expect(c.sent).toEqual([['approve', 'wf-1', { callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: 7, by: 'alice@acme' }]]);
    } finally {
      await c.close();
    }
  });

  it('the identity header must name one person, visibly, in UTF-8: a repeated header, a bidi or invisible name, or bytes that are not UTF-8 are refused (403) and nothing is sent; a UTF-8 name arrives as written', async () => {
    const c = await consoleWith({ identityHeader: 'X-Forwarded-User' });
    const approve = (value: string | string[]) => c.post('/approve', { intentDigest: 'sha256:aaaa', stateVersion: '7' }, { 'x-forwarded-user': value });
    /** A header value as its UTF-8 bytes on the wire (Node sends a string's characters as Latin-1 bytes). */
    const utf8OnTheWire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    try {
      const refused = [
        await approve(['mallory', 'alice']),
        await approve(utf8OnTheWire('\u202eecila')),
        await approve(utf8OnTheWire('\u200b\u2060')),
        await approve(utf8OnTheWire('alice\u00a0smith')),
        await approve('Jos\u00e9'),
      ];
      expect(refused.map((r) => [r.statusCode, /IDENTITY_REQUIRED/.test(r.body)])).toEqual(Array(5).fill([403, true]));
      expect(refused[0]!.body).toContain('2 times');
      expect(refused[4]!.body).toContain('not UTF-8');
      expect(c.sent).toEqual([]);
      expect((await approve(utf8OnTheWire('José Núñez'))).statusCode).toBe(200);
      expect(c.sent.map(([, , request]) => (request as { by?: string }).by)).toEqual(['José Núñez']);
    } finally {
      await c.close();
    }
  });

  it('a console started with an operator name that names no one visibly is refused at start (INVALID_ARGUMENT)', async () => {
    await expect(
      startConsoleServer({ operations: recordingOperations().operations, token: TOKEN, port: 0, namespace: 'default', decider: { operator: 'ops\u202e' } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
