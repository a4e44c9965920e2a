/**
 * Approvals a person provably gave, end to end (docs/protocol.md#approval-grants): one dev server,
 * the demo provider, one real `ttc worker` process holding grant keys (an HMAC key and an
 * approver's Ed25519 public key, TTC_APPROVAL_GRANT_KEYS) with `create_ticket` pinned to need
 * approval, and the `ttc` CLI spawned per command. `ttc approve` with the approver's signing key
 * runs the call once and the store records who approved it; an approval without a grant, one
 * signed with a key the worker does not hold, a grant replayed from another run's history and an
 * expired grant are all accepted by the run (it holds no key) and refused by the worker before any
 * claim: no ticket is created.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter, type WorkflowHandle } from '@temporalio/client';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { newEd25519GrantKeyEntries, readWaitingCall, approveCall } from '../../src/operator';
import { signApprovalGrant } from '../../src/checkpoint/approval-grant';
import { grantUseCallId } from '../../src/activities/fence/approval-grants';
import { spawnWorker, type WorkerProcess } from '../../src/dev/worker-process';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { runStatusQuery } from '../../src/workflows/agent/messages';
import type { AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { runCli, type CliOutput } from '../helpers/cli';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const TRANSCRIPT = join(__dirname, '../../examples/transcripts/anthropic-ticket.json');
const CALL_ID = 'toolu_01VbK3nXq8RtZp6LwYc2JhDf';
const TASK_QUEUE = 'approval-grants';
const HMAC_HEX = '5d2c7a90e1b34f68c9a0d1e2f3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6';
const OTHER_HEX = 'bd8ae59d81e7e5d94a770fd25b454cb2680efe0bd227176dcafa1c18103699f5';
const alice = newEd25519GrantKeyEntries('alice');

let dir: string;
let env: LocalTestEnv;
let provider: RunningProvider;
let worker: WorkerProcess;
let cliEnv: NodeJS.ProcessEnv;

const cli = (extra: NodeJS.ProcessEnv, ...args: string[]): Promise<CliOutput> => runCli(args, { ...cliEnv, ...extra });
const ticketsCreatedFor = async (idempotencyKey: string | null): Promise<number> => (await provider.client.effects()).byIdempotencyKey[idempotencyKey ?? ''] ?? 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-grants-e2e-'));
  [env, provider] = await Promise.all([createLocalEnv(), startProvider({ dbFile: join(dir, 'provider.db'), stderr: 'ignore' })]);
  cliEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: env.devServer.address,
    TEMPORAL_NAMESPACE: env.devServer.namespace,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
    TTC_PROVIDER_URL: provider.url,
  };
  for (const name of [
    'TTC_PAYLOAD_CODEC_KEY',
    'TTC_PAYLOAD_CODEC_KEYS',
    'TTC_TENANTS',
    'TTC_TOOLS',
    'TTC_REQUIRE_APPROVAL',
    'TTC_APPROVAL_SIGNING_KEY',
    'TTC_APPROVAL_GRANT_KEYS',
    'TEMPORAL_PROFILE',
  ])
    delete cliEnv[name];
  worker = await spawnWorker({
    env: {
      ...cliEnv,
      TTC_TOOLS: 'create_ticket,close_ticket,send_email',
      TTC_REQUIRE_APPROVAL: 'create_ticket',
      TTC_APPROVAL_GRANT_KEYS: `ops:hmac:hex:${HMAC_HEX},${alice.verification}`,
    },
    identity: 'approval-grants-worker',
  });
});

afterAll(async () => {
  await worker?.kill();
  await provider?.stop();
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function awaitingApproval(handle: WorkflowHandle): Promise<RunStatusView> {
  const until = Date.now() + 30_000;
  for (;;) {
    const status = await handle.query(runStatusQuery).catch(() => null);
    if (status?.pendingCalls.some((c) => c.callId === CALL_ID && c.status === 'awaiting-approval')) return status;
    if (Date.now() > until) throw new Error(`run ${handle.workflowId} never awaited approval: ${JSON.stringify(status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts a run that waits for approval of its create_ticket call. */
async function startWaiting(workflowId: string): Promise<WorkflowHandle> {
  const started = await cli({}, 'start', TRANSCRIPT, '--workflow-id', workflowId, '--require-approval', 'create_ticket', '--approval-ttl', '10m');
  expect(started.code).toBe(0);
  const handle = env.client.workflow.getHandle(workflowId);
  await awaitingApproval(handle);
  return handle;
}

/** The grant an approveCall update of the run's history carried (what a history reader holds). */
async function grantInHistory(workflowId: string): Promise<string> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  for (const event of history.events ?? []) {
    const payload = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
    if (payload) return (defaultPayloadConverter.fromPayload(payload) as { grant: string }).grant;
  }
  throw new Error(`no approval in ${workflowId}'s history`);
}

describe('signed approval grants on a fleet worker', () => {
  const stamp = Date.now();
  const signedRun = `grant-signed-${stamp}`;
  let signed: Promise<void> | undefined;

  beforeAll(() => {
    signed = (async () => {
      const handle = await startWaiting(signedRun);
      const approved = await cli({ TTC_APPROVAL_SIGNING_KEY: alice.signing }, 'approve', signedRun, CALL_ID, '--by', 'alice@ops');
      expect([approved.code, approved.stderr]).toEqual([0, '']);
      expect(approved.stdout).toContain('signed an approval grant with key "alice" for alice@ops');
      await handle.result();
    })();
  });

  it('ttc approve with the approver’s Ed25519 key: the call runs once and the store records who approved it', async () => {
    await signed;
    const result: AgentWorkflowResult = await env.client.workflow.getHandle(signedRun).result();
    expect(result.calls.map((c) => [c.callId, c.status, c.source])).toEqual([[CALL_ID, 'completed', 'executed']]);
    expect(await ticketsCreatedFor(result.calls[0]!.idempotencyKey)).toBe(1);
    const grant = await grantInHistory(signedRun);
    const grantId = JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8')).grantId as string;
    const runChainId = (await env.client.workflow.getHandle(signedRun).describe()).runId;
    const store = await openCheckpointStore(cliEnv.TTC_STORE_URL!);
    try {
      const use = await store.getByCall('default/demo', grantUseCallId(runChainId, signedRun, grantId));
      expect(use?.result?.payload).toMatchObject({ grantUse: { approver: 'alice@ops', usedBy: callBindingId({ runChainId, workflowId: signedRun, callId: CALL_ID }) } });
    } finally {
      await store.close();
    }
  });

  it('an approval without a grant, signed with a key the worker does not hold, replayed from another run or expired: refused by the worker, no ticket', async () => {
    await signed;
    const runs = {
      unsigned: `grant-unsigned-${stamp}`,
      forged: `grant-forged-${stamp}`,
      replayed: `grant-replayed-${stamp}`,
      expired: `grant-expired-${stamp}`,
    };
    const handles = Object.fromEntries(await Promise.all(Object.entries(runs).map(async ([k, id]) => [k, await startWaiting(id)] as const)));
    const [unsigned, forged] = await Promise.all([
      cli({}, 'approve', runs.unsigned, CALL_ID),
      cli({ TTC_APPROVAL_SIGNING_KEY: `ops:hmac:hex:${OTHER_HEX}` }, 'approve', runs.forged, CALL_ID),
    ]);
    expect([unsigned.code, unsigned.stderr, forged.code, forged.stderr]).toEqual([0, '', 0, '']);
    const replayedGrant = await grantInHistory(signedRun);
    const namespace = env.devServer.namespace;
    const send = async (workflowId: string, grantOf: (waiting: Awaited<ReturnType<typeof readWaitingCall>>) => string) => {
      const waiting = await readWaitingCall(handles[workflowId === runs.replayed ? 'replayed' : 'expired']!, namespace, CALL_ID, 'awaiting-approval');
      await approveCall(handles[workflowId === runs.replayed ? 'replayed' : 'expired']!, {
        callId: CALL_ID,
        intentDigest: waiting.call.intentDigest!,
        stateVersion: waiting.status.stateVersion,
        by: 'mallory',
        grant: grantOf(waiting),
      });
    };
    await send(runs.replayed, () => replayedGrant);
    await send(runs.expired, (waiting) => {
      // Signed an hour ago for one minute: a grant that expired before it reached the worker.
      const past = new Date(Date.now() - 3_600_000);
      const { tenant, runChainId } = waiting.status;
      const call = {
        namespace,
        tenant: tenant!,
        workflowId: waiting.workflowId,
        runChainId: runChainId!,
        callId: CALL_ID,
        toolName: waiting.call.toolName,
        intentDigest: waiting.call.intentDigest!,
      };
      return signApprovalGrant(
        call,
        { approver: 'alice@ops', expiresAt: new Date(past.getTime() + 60_000).toISOString() },
        { keyId: 'ops', hmacSecret: Buffer.from(HMAC_HEX, 'hex') },
        past,
      );
    });
    const results = await Promise.all(Object.values(handles).map((h) => h.result() as Promise<AgentWorkflowResult>));
    // An expired approval is a rejection the model reads (as when nobody approved in time).
    expect(results.map((r) => [r.calls[0]!.status, r.calls[0]!.errorType, r.calls[0]!.reason?.split(':')[0]])).toEqual([
      ['failed', 'APPROVAL_REQUIRED', 'APPROVAL_REQUIRED'],
      ['failed', 'APPROVAL_MISMATCH', 'APPROVAL_MISMATCH'],
      ['failed', 'APPROVAL_MISMATCH', 'APPROVAL_MISMATCH'],
      ['rejected', 'USER_REJECTION', 'APPROVAL_EXPIRED'],
    ]);
    expect(results[0]!.calls[0]!.reason).toContain('carries none');
    expect(results[1]!.calls[0]!.reason).toContain('signature does not verify');
    expect(results[2]!.calls[0]!.reason).toContain('the approval grant is for workflowId');
    expect(results[3]!.calls[0]!.reason).toContain('grant expired');
    for (const result of results) expect(await ticketsCreatedFor(result.calls[0]!.idempotencyKey)).toBe(0);
  });
});
