/**
 * The approval console in a real browser: a real dev server, a worker with real
 * tools and store, `ttc console` spawned as a user runs it, and Debian's Chromium driven by
 * playwright-core (scripts/ensure-chromium.sh; no browser download). A person approves a call
 * through the page and the run completes with the call executed once; a stale page's approval is
 * refused by the run (STALE_STATE_VERSION, APPROVAL_MISMATCH) and nothing runs; a paused call is
 * resolved as applied through the page. Logging in leaves no token in the browser's history (read
 * from the profile's History database) and a login link works once. TTC_CONSOLE_SCREENSHOT=1
 * rewrites docs/console-pending.png.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { chromium, type Browser, type Page } from 'playwright-core';
import { z } from 'zod';
import { defineTool, ToolError } from '../../src/activities';
import { connectClient, type ConnectedClient } from '../../src/client';
import { resolveConfig, type Config } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { createAgentWorker, type AgentWorker } from '../../src/worker';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, RunStatusView } from '../../src/workflows/agent/types';
import { ROOT } from '../helpers/cli';
import { installQuietTemporalRuntime } from '../helpers/temporal';

// ERROR: the charge tool's expected OUTCOME_UNKNOWN would log a WARN.
installQuietTemporalRuntime('ERROR');
jest.setTimeout(90_000);

const TASK_QUEUE = 'console-browser';
const SCRIPT = '<script>alert(1)</script>';
/** The console's fixed token (TTC_CONSOLE_TOKEN): people log in with it through the login form. */
const CONSOLE_TOKEN = 'console-browser-token-0123456789abcdef';

describe('the approval console in Chromium', () => {
  let dir: string;
  let server: DevServer;
  let config: Config;
  let worker: AgentWorker;
  let running: Promise<void>;
  let client: ConnectedClient;
  let consoleProcess: ChildProcess;
  let loginUrl: string;
  let executablePath: string;
  let browser: Browser;
  /** Executions of each tool call, by call id (what the provider would have applied). */
  const executions = new Map<string, number>();
  const dialogs: string[] = [];
  let seq = 0;

  const count = (callId: string) => executions.set(callId, (executions.get(callId) ?? 0) + 1);
  const tools = [
    defineTool({
      name: 'refund',
      revision: 'v1',
      input: z.object({ order: z.string(), amountCents: z.number().int(), note: z.string() }),
      target: (input) => ({ order: input.order }),
      async execute(input, ctx) {
        count(ctx.callId);
        return { output: { refunded: input.order, amountCents: input.amountCents }, receipt: { refundId: `re_${ctx.callId}` } };
      },
    }),
    defineTool({
      name: 'charge',
      revision: 'v1',
      input: z.object({ card: z.string(), amountCents: z.number().int() }),
      async execute(_input, ctx) {
        count(ctx.callId);
        throw new ToolError('unknown-outcome', 'the card network timed out after the charge request was sent');
      },
    }),
  ];
  /** The model: `modelOptions.script[turn]`, then the end. */
  const model: ModelAdapter = {
    name: 'scripted',
    async turn(input) {
      const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
      return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    },
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-console-'));
    executablePath = execFileSync('bash', [join(ROOT, 'scripts/ensure-chromium.sh')], { encoding: 'utf8' }).trim();
    [server, browser] = await Promise.all([startDevServer(), chromium.launch({ executablePath, headless: true })]);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
      NODE_OPTIONS: '',
    };
    for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEY_ID', 'TTC_PAYLOAD_CODEC_KEYS', 'TTC_TENANTS', 'TTC_TOOLS', 'TTC_REQUIRE_APPROVAL']) delete env[name];
    config = resolveConfig({}, env);
    env.TTC_CONSOLE_TOKEN = CONSOLE_TOKEN;
    consoleProcess = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), join(ROOT, 'src/cli/index.ts'), 'console', '--port', '0'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    [loginUrl, worker, client] = await Promise.all([
      printedLoginUrl(consoleProcess),
      createAgentWorker({ config, tools, models: [model], payloadCodec: null }),
      connectClient(config, { payloadCodec: null }),
    ]);
    running = worker.worker.run();
  });

  afterAll(async () => {
    if (consoleProcess?.exitCode === null) consoleProcess.kill('SIGKILL');
    await browser?.close();
    await client?.close();
    worker?.worker.shutdown();
    await running?.catch(() => undefined);
    await worker?.store.close().catch(() => undefined);
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  async function startRun(toolCalls: ToolCallRequest[]) {
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      modelOptions: { script: [{ stopReason: 'tool_use', text: 'on it', toolCalls }] } as never,
      prompt: 'handle the customer request',
      tools: ['refund', 'charge'],
      budget: { maxTurns: 4, maxToolCalls: 6, deadlineMs: 300_000 },
      approvalRequired: { refund: { expiresAfterMs: 15 * 60_000 } },
      activityOptions: { startToCloseTimeoutMs: 30_000, retry: { initialIntervalMs: 100, maximumIntervalMs: 500 } },
    };
    seq += 1;
    return client.client.workflow.start(agentWorkflow, { taskQueue: TASK_QUEUE, workflowId: `support-case-${1040 + seq}-${Date.now().toString(36)}`, args: [input] });
  }

  /** Polls the run's status query until `predicate` holds. */
  async function statusWhen(handle: { query: (q: typeof runStatusQuery) => Promise<RunStatusView> }, predicate: (s: RunStatusView) => boolean): Promise<RunStatusView> {
    for (let i = 0; i < 200; i++) {
      const status = await handle.query(runStatusQuery);
      if (predicate(status)) return status;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the run never reached the expected status; last: ${JSON.stringify(await handle.query(runStatusQuery))}`);
  }

  /** A logged-in page showing `callId` of run `workflowId` (visibility lists a run a moment after it starts waiting). */
  async function openCall(workflowId: string, callId: string, page?: Page) {
    const tab = page ?? (await browser.newPage({ viewport: { width: 1100, height: 900 } }));
    tab.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await logInWithForm(tab, new URL(loginUrl).origin);
    const call = tab.locator(`section[data-workflow-id="${workflowId}"] article[data-call-id="${callId}"]`);
    for (let i = 0; i < 100 && (await call.count()) === 0; i++) await tab.reload();
    await call.waitFor();
    return { page: tab, call };
  }

  it('a person approves a call through the page and the run completes with the call executed once; the <script> argument is shown as text', async () => {
    const handle = await startRun([{ callId: 'r1', toolName: 'refund', input: { order: 'ORD-1042', amountCents: 2_500, note: `customer wrote: ${SCRIPT}` } }]);
    await statusWhen(handle, (s) => s.phase === 'awaiting-approval');
    const { page, call } = await openCall(handle.workflowId, 'r1');

    expect(new URL(page.url()).search).toBe(''); // the token left the address bar
    expect(await call.locator('pre.arguments').textContent()).toContain(`"note": "customer wrote: ${SCRIPT}"`);
    expect(await page.locator('script').count()).toBe(0);
    expect(dialogs).toEqual([]);
    if (process.env.TTC_CONSOLE_SCREENSHOT === '1') await page.screenshot({ path: join(ROOT, 'docs/console-pending.png'), fullPage: true });

    await call.getByRole('button', { name: 'Approve' }).click();
    await expect(page.locator('.outcome').textContent()).resolves.toContain(`Approved call r1 of run ${handle.workflowId}`);
    const result = await handle.result();
    expect([result.status, result.calls.map((c) => [c.callId, c.status, c.source])]).toEqual(['completed', [['r1', 'completed', 'executed']]]);
    expect(executions.get('r1')).toBe(1);
    expect(dialogs).toEqual([]);
  });

  it('a stale page cannot approve: STALE_STATE_VERSION after the run moved on, APPROVAL_MISMATCH for another intent; nothing runs until a current page approves', async () => {
    const handle = await startRun([
      { callId: 'a1', toolName: 'refund', input: { order: 'ORD-2001', amountCents: 100, note: 'first' } },
      { callId: 'a2', toolName: 'refund', input: { order: 'ORD-2002', amountCents: 200, note: 'second' } },
    ]);
    await statusWhen(handle, (s) => s.pendingCalls.filter((c) => c.status === 'awaiting-approval').length === 2);
    const stale = await openCall(handle.workflowId, 'a2');
    const current = await openCall(handle.workflowId, 'a1');

    await current.call.getByRole('button', { name: 'Approve' }).click();
    await statusWhen(handle, (s) => s.calls.some((c) => c.callId === 'a1' && c.status === 'completed'));
    await stale.call.getByRole('button', { name: 'Approve' }).click();
    await expect(stale.page.locator('.outcome .code').textContent()).resolves.toBe('STALE_STATE_VERSION');
    expect(executions.get('a2')).toBeUndefined();

    const changed = await openCall(handle.workflowId, 'a2', stale.page);
    // A page showing another intent than the run's: its hidden digest field differs.
    await changed.call.locator('input[name=intentDigest]').evaluate((input, digest) => ((input as unknown as { value: string }).value = digest), `sha256:${'0'.repeat(64)}`);
    await changed.call.getByRole('button', { name: 'Approve' }).click();
    await expect(changed.page.locator('.outcome .code').textContent()).resolves.toBe('APPROVAL_MISMATCH');
    expect(executions.get('a2')).toBeUndefined();
    expect((await handle.query(runStatusQuery)).pendingCalls.map((c) => [c.callId, c.status])).toEqual([['a2', 'awaiting-approval']]);

    const fresh = await openCall(handle.workflowId, 'a2', stale.page);
    await fresh.call.getByRole('button', { name: 'Approve' }).click();
    const result = await handle.result();
    expect(result.calls.map((c) => [c.callId, c.status])).toEqual([
      ['a1', 'completed'],
      ['a2', 'completed'],
    ]);
    expect([executions.get('a1'), executions.get('a2')]).toEqual([1, 1]);
  });

  it('a call paused on an unknown outcome shows its evidence and is resolved as applied through the page; the tool is not run again', async () => {
    const handle = await startRun([{ callId: 'c1', toolName: 'charge', input: { card: 'card-77', amountCents: 900 } }]);
    await statusWhen(handle, (s) => s.phase === 'paused');
    const { page, call } = await openCall(handle.workflowId, 'c1');
    expect(await call.locator('dl').textContent()).toContain('the card network timed out after the charge request was sent');

    await call.locator('textarea[name=result]').fill('{"charged": true, "chargeId": "ch_77"}');
    await call.locator('input[name=reason]').fill('found the charge in the card network dashboard');
    await call.getByRole('button', { name: 'Applied (with this result)' }).click();
    await expect(page.locator('.outcome').textContent()).resolves.toContain('call c1 of run');
    const result = await handle.result();
    expect(result.calls.map((c) => [c.callId, c.status, c.outcome])).toEqual([
      ['c1', 'resolved-applied', expect.objectContaining({ ok: true, output: { charged: true, chargeId: 'ch_77' } })],
    ]);
    expect(executions.get('c1')).toBe(1);
  });

  /** The URLs in the History database of Chromium profile `profile` (read after the browser closed it). */
  function historyUrls(profile: string): string[] {
    const historyFile = join(profile, 'Default', 'History');
    expect(existsSync(historyFile)).toBe(true);
    const history = new Database(historyFile, { readonly: true, fileMustExist: true });
    try {
      return (history.prepare('SELECT url FROM urls').all() as { url: string }[]).map((row) => row.url);
    } finally {
      history.close();
    }
  }

  /** Runs `visit` in a persistent Chromium profile, closes it (Chromium writes its History database), and returns the history's URLs. */
  async function browse(profile: string, visit: (tab: Page) => Promise<void>): Promise<string[]> {
    const context = await chromium.launchPersistentContext(profile, { executablePath, headless: true });
    try {
      await visit(await context.newPage());
    } finally {
      await context.close();
    }
    return historyUrls(profile);
  }

  const carriesToken = (url: string) => url.includes(CONSOLE_TOKEN) || decodeURIComponent(url).includes(CONSOLE_TOKEN);

  it("logging in through the printed link, then through the login form, leaves no console token in the browser's history; the used link does not log in again", async () => {
    const origin = new URL(loginUrl).origin;
    const profile = join(dir, 'chromium-profile');
    const heading = async (tab: Page) => [tab.url(), await tab.locator('h1').textContent()];

    const afterLink = await browse(profile, async (tab) => {
      await tab.goto(loginUrl);
      expect(await heading(tab)).toEqual([`${origin}/`, 'Runs waiting for a person']);
      await tab.goto(`${origin}/?after=link`);
    });
    // The visits are recorded (so the check below is not vacuous), and none carries the token.
    expect(afterLink).toEqual(expect.arrayContaining([loginUrl, `${origin}/?after=link`]));
    expect(afterLink.filter(carriesToken)).toEqual([]);

    // Every URL in that history, opened in a browser without the console's cookie, logs nobody in.
    const stranger = await browser.newPage();
    try {
      for (const url of afterLink) {
        await stranger.goto(url);
        expect([url, await stranger.locator('.outcome .code').textContent()]).toEqual([url, url === loginUrl ? 'LOGIN_LINK_USED' : 'TOKEN_REQUIRED']);
      }
    } finally {
      await stranger.context().close();
    }

    const afterForm = await browse(profile, async (tab) => {
      await tab.context().clearCookies();
      await logInWithForm(tab, origin);
      expect(await heading(tab)).toEqual([`${origin}/`, 'Runs waiting for a person']);
    });
    expect(afterForm).toEqual(expect.arrayContaining([`${origin}/login`, `${origin}/`]));
    expect(afterForm.filter(carriesToken)).toEqual([]);
  });

  it('`ttc console` stops on SIGTERM with exit code 0', async () => {
    const exited = new Promise<number | null>((done) => consoleProcess.once('exit', (code) => done(code)));
    consoleProcess.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

/** Logs `tab` in through the console's login form with the console token (what a person types). */
async function logInWithForm(tab: Page, origin: string): Promise<void> {
  await tab.goto(`${origin}/login`);
  await tab.locator('input[name=token]').fill(CONSOLE_TOKEN);
  await Promise.all([tab.waitForURL(`${origin}/`), tab.getByRole('button', { name: 'Log in' }).click()]);
}

/** The login link `ttc console` prints (`open http://127.0.0.1:<port>/…`). */
function printedLoginUrl(child: ChildProcess): Promise<string> {
  return new Promise((done, fail) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const url = /^open (http:\/\/127\.0\.0\.1:\d+\/\S*)$/m.exec(out)?.[1];
      if (url) done(url);
    });
    child.once('exit', (code) => fail(new Error(`ttc console exited (${code}) before printing its URL: ${out}`)));
  });
}
