/**
 * Adversarial review of the console's HTTP surface: the real listening console
 * (startConsoleServer on a free port) with operations that record what they were asked to send
 * (the run's own validation is exercised in console-on-dev-server.test.ts). Each case attacks
 * one promise: methods other than GET / POST, attribute-context escaping of every model-controlled
 * value, malformed and oversized bodies, a JSON body, the token never accepted from a POST's URL
 * and never written into a page or a redirect target, the login redirect staying on the console,
 * and a form sending exactly the call the page showed.
 */
import { startConsoleServer, type RunningConsole } from '../../src/console/server';
import type { WaitingRun } from '../../src/operator/waiting-runs';
import { awaitingCall, recordingOperations, waitingRun } from '../unit/console/fixtures';
import { cookiesOf, formsOf, logIn, send } from '../helpers/console-http';

const TOKEN = 'adversarial-console-token-0123456789';

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
  });

  const port = () => Number(new URL(server.url).port);
  const get = (url: string, headers: Record<string, string> = {}) => send(port(), 'GET', url, { host: HOST, ...headers });

  async function openPage(): Promise<{ cookie: string; csrf: string; page: string }> {
    const tokenCookie = await logIn(port(), HOST, TOKEN);
    const list = await get('/', { cookie: tokenCookie });
    expect(list.statusCode).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(list.body)?.[1];
    if (!csrf) throw new Error(`no CSRF token in the page: ${list.body}`);
    return { cookie: `${tokenCookie}; ${cookiesOf(list)}`, csrf, page: list.body };
  }

  const post = (url: string, cookie: string, body: string, headers: Record<string, string> = {}) =>
    send(port(), 'POST', url, { host: HOST, origin: ORIGIN, cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers }, body);

  it.each(['PUT', 'DELETE', 'PATCH', 'OPTIONS'])('%s /approve with the token, the origin and a valid CSRF token reaches no run', async (method) => {
    const { cookie, csrf } = await openPage();
    const body = new URLSearchParams({ _csrf: csrf, workflowId: 'wf-1', callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: '7' }).toString();
    const response = await send(port(), method, '/approve', { host: HOST, origin: ORIGIN, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body);
    expect(response.statusCode).toBeGreaterThanOrEqual(400);
    expect(sent).toEqual([]);
  });

  it('a POST carrying the token only in its URL (?token=) is refused 401 and reaches no run', async () => {
    const { csrf } = await openPage();
    const response = await post(
      `/approve?token=${TOKEN}`,
      '',
      new URLSearchParams({ _csrf: csrf, workflowId: 'wf-1', callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: '7' }).toString(),
    );
    expect(response.statusCode).toBe(401);
    expect(sent).toEqual([]);
  });

  it('attribute-context payloads in every model-controlled value stay inside their quoted attributes, and the forms send them back unchanged', async () => {
    const breakout = `x" onfocus="alert(1)" autofocus x='y'><svg/onload=alert(2)>`;
    fake.runs = [
      {
        ...waitingRun([
          awaitingCall({
            callId: `c1${breakout}`,
            modelCallId: `m${breakout}`,
            toolName: `tool${breakout}`,
            intentDigest: `sha256:${breakout}`,
            idempotencyKey: `k${breakout}`,
            toolRevision: `r${breakout}`,
            approvalExpiresAt: `2030${breakout}`,
          }),
        ]),
        workflowId: `wf${breakout}`,
      } as WaitingRun,
    ];
    const { page } = await openPage();
    expect(page).not.toMatch(/<svg|onfocus="alert|onload=alert\(2\)>/);
    // Every attribute value of every tag is quoted and holds no raw quote or angle bracket.
    for (const tag of page.match(/<[a-z][^>]*>/g) ?? []) {
      const stripped = tag.replace(/"[^"<>]*"/g, '').replace(/'[^'<>]*'/g, '');
      expect([tag, /\son\w+=|["'<]/i.test(stripped.slice(1))]).toEqual([tag, false]);
    }
    const [approve] = formsOf(page).filter((f) => f.action === '/approve');
    expect(approve!.fields).toEqual(expect.objectContaining({ workflowId: `wf${breakout}`, callId: `c1${breakout}`, intentDigest: `sha256:${breakout}` }));
  });

  it('resolve applied with malformed JSON, an empty result, a repeated field or a wrong resolution is refused 400 and nothing is sent', async () => {
    fake.runs = [
      waitingRun([awaitingCall({ status: 'paused', approvalExpiresAt: null })], {
        paused: { callId: 'c1', toolName: 'transfer', errorType: 'OUTCOME_UNKNOWN', reason: 'r', pausedAt: '2030-01-01T00:00:00.000Z' },
      } as never),
    ];
    const { cookie, csrf } = await openPage();
    const base = `_csrf=${encodeURIComponent(csrf)}&workflowId=wf-1&callId=c1&reason=r`;
    for (const extra of [
      '&resolution=applied&result=%7Bnot',
      '&resolution=applied&result=',
      '&resolution=applied',
      '&resolution=applied&result=1&result=2',
      '&resolution=maybe&result=1',
      '&resolution=applied&result=1&receipt=%7B',
    ]) {
      const response = await post('/resolve', cookie, `${base}${extra}`);
      expect([extra, response.statusCode]).toEqual([extra, 400]);
    }
    expect(sent).toEqual([]);
  });

  it('an oversized body (2 MiB) is refused 413 with the security headers and nothing is sent', async () => {
    const { cookie, csrf } = await openPage();
    const body = `_csrf=${encodeURIComponent(csrf)}&workflowId=wf-1&callId=c1&reason=r&resolution=applied&result=${'1'.repeat(2 * 1_048_576)}`;
    const response = await post('/resolve', cookie, body);
    expect(response.statusCode).toBe(413);
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(sent).toEqual([]);
  });

  it('a JSON body with a non-string CSRF token or non-string fields is refused with a 4xx, not a 500, and nothing is sent', async () => {
    const { cookie, csrf } = await openPage();
    for (const body of [
      { _csrf: { toString: 1 }, workflowId: 'wf-1' },
      { _csrf: [csrf], workflowId: 'wf-1' },
      { _csrf: csrf, workflowId: ['wf-1'], callId: 'c1', intentDigest: 'sha256:aaaa', stateVersion: 7 },
    ]) {
      const response = await post('/approve', cookie, JSON.stringify(body), { 'content-type': 'application/json' });
      expect([JSON.stringify(body), response.statusCode >= 400 && response.statusCode < 500]).toEqual([JSON.stringify(body), true]);
    }
    expect(sent).toEqual([]);
  });

  it('the token is never written into a page, a redirect target or a cookie other than the HttpOnly one', async () => {
    const login = await get(`/?token=${TOKEN}&x=1`);
    expect(`${login.body}${login.headers.location ?? ''}`).not.toContain(TOKEN);
    const { page } = await openPage();
    expect(page).not.toContain(TOKEN);
    const notFound = await get(`/nowhere?token=${TOKEN}`);
    expect(notFound.body).not.toContain(TOKEN);
  });

  it('no request redirects off the console: ?token= on any path is refused without a Location, and a login (link or form) redirects to / only', async () => {
    for (const path of ['/.//evil.example/?token=', '/a/..//evil.example?token=', '/%2e//evil.example?token=', '/.//\\evil.example/?token=', '/./\\/evil.example?token=']) {
      const response = await get(`${path}${TOKEN}`);
      expect([path, response.statusCode, response.headers.location]).toEqual([path, 401, undefined]);
    }
    const link = new URL(server.issueLoginUrl());
    for (const path of [`/.//evil.example/login${link.search}`, `//evil.example/login${link.search}`, `${link.pathname}${link.search}`]) {
      const response = await get(path);
      expect([path, response.headers.location === undefined || response.headers.location === '/']).toEqual([path, true]);
    }
  });

  it('a form sends back exactly the call id and workflow id the page shows, even when they hold invisible characters or surrounding spaces', async () => {
    const callIds = ['c1\u200b', 'c2 ', '\tc3', 'c4\u202e'];
    fake.runs = [
      {
        ...waitingRun(callIds.map((callId) => awaitingCall({ callId, modelCallId: callId, intentDigest: `sha256:${callIds.indexOf(callId)}` }))),
        workflowId: 'wf-1 ',
      } as WaitingRun,
    ];
    const { cookie, page } = await openPage();
    for (const form of formsOf(page).filter((f) => f.action === '/reject')) {
      const response = await post('/reject', cookie, new URLSearchParams({ ...form.fields, reason: 'no' }).toString());
      expect(response.statusCode).toBe(200);
    }
    expect(sent.map(([, workflowId, request]) => [workflowId, (request as { callId: string }).callId])).toEqual(callIds.map((callId) => ['wf-1 ', callId]));
  });
});
