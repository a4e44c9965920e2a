/**
 * `ttc resolve-in-store`, spawned as a user runs it (`runCli`: a child process with only the
 * environment given), against a real SQLite store file that this process seeds and reads back:
 * what it prints, what it stores, and that every refusal exits 1 with its reason and writes nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { idempotencyKey } from '../../src/checkpoint/digest';
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimExecution, markExecutionUncertain } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, TransitionResult } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { resolveCallInStore } from '../../src/plugin/resolve-in-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { runCli, type CliOutput } from '../helpers/cli';

jest.setTimeout(120_000);

const ESC = '\u001b';

describe('ttc resolve-in-store', () => {
  let dir: string;
  let url: string;
  let store: CheckpointStore;
  const secretHex = randomBytes(32).toString('hex');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-cli-resolve-in-store-'));
    url = `sqlite:${join(dir, 'checkpoints.db')}`;
    store = await openCheckpointStore(url);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `ttc resolve-in-store …` with the store, the idempotency-key secret and nothing else of this process's environment. */
  const cli = (...args: string[]): Promise<CliOutput> =>
    runCli(['resolve-in-store', ...args], { PATH: process.env.PATH, HOME: process.env.HOME, TTC_STORE_URL: url, TTC_IDEMPOTENCY_KEY_SECRET: `hex:${secretHex}` });

  /** A call of a fresh workflow left `status` by a holder that died (claimed an hour ago, deadline 30 s later). */
  async function seed(
    status: 'ready' | 'uncertain',
    namespace = 'default/default',
    workflowId = `wf-${randomUUID()}`,
  ): Promise<{ workflowId: string; runChainId: string; binding: Binding; record: CheckpointRecord }> {
    const runChainId = `run-${randomUUID()}`;
    const binding: Binding = {
      namespace,
      callId: callBindingId({ runChainId, workflowId, callId: 'act-3' }),
      toolName: 'chargeCard',
      toolRevision: 'v2',
      inputFingerprint: `sha256:${'cd'.repeat(32)}`,
    };
    const claimedAt = Date.now() - 3_600_000;
    const at = (ms: number): string => new Date(claimedAt + ms).toISOString();
    let record = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
    const step = async (t: TransitionResult): Promise<void> => {
      expect(await store.compareAndSwap(t.expectedRevision, t.next, record)).toBe(true);
      record = t.next;
    };
    if (status === 'uncertain') {
      await step(claimExecution(record, { attemptId: 'attempt-1-dead', at: at(0), deadlineAt: at(30_000) }));
      await step(markExecutionUncertain(record, { attemptId: 'attempt-1-dead', at: at(1_000), reason: 'connection reset after the request was sent' }));
    }
    return { workflowId, runChainId, binding, record };
  }

  const stored = (binding: Binding): Promise<CheckpointRecord | null> => store.getByCall(binding.namespace, binding.callId);

  it('--applied: stores the result and the audit, and prints the tool, revision, status, idempotency key, claim time and reason', async () => {
    const call = await seed('uncertain');
    const out = await cli(
      call.workflowId,
      'act-3',
      '--run-chain',
      call.runChainId,
      '--revision',
      String(call.record.revision),
      '--applied',
      '{"chargeId":"ch_42","amount":1200}',
      '--reason',
      'found ch_42 in the provider dashboard',
      '--by',
      'alice',
    );
    expect(out).toMatchObject({ code: 0, stderr: '' });
    const after = await stored(call.binding);
    expect(after).toMatchObject({ status: 'completed', revision: call.record.revision + 1, execution: { attemptId: 'attempt-1-dead' } });
    expect(after!.result!.payload).toEqual({
      ok: true,
      output: { amount: 1200, chargeId: 'ch_42' },
      receipt: null,
      resolvedInStore: {
        kind: 'applied',
        by: 'alice',
        reason: 'found ch_42 in the provider dashboard',
        at: after!.updatedAt,
        fromStatus: 'uncertain',
        attemptId: 'attempt-1-dead',
      },
    });
    const key = idempotencyKey(
      { namespace: 'default/default', runChainId: call.runChainId, workflowId: call.workflowId, callId: 'act-3', toolName: 'chargeCard', toolRevision: 'v2' },
      Buffer.from(secretHex, 'hex'),
    );
    expect(out.stdout.split('\n')).toEqual([
      `resolved ${call.workflowId}/act-3 in the store as applied`,
      '  tool: chargeCard revision v2',
      `  status: uncertain → completed (revision ${call.record.revision} → ${call.record.revision + 1})`,
      `  run chain: ${call.runChainId}`,
      `  idempotency key: ${key}`,
      `  claimed at: ${call.record.execution!.claimedAt} by attempt-1-dead`,
      '  outcome unknown because: connection reset after the request was sent',
      '  reason: found ch_42 in the provider dashboard',
      `  resolved by: alice at ${after!.updatedAt}`,
      `  the activity's next attempt delivers result {"amount":1200,"chargeId":"ch_42"}`,
      '',
    ]);
  });

  it('--not-applied [--type]: stores the failure the workflow will receive; --tenant, --namespace and --run-chain address the call', async () => {
    const call = await seed('uncertain', 'prod/acme');
    const out = await cli(
      call.workflowId,
      'act-3',
      '--revision',
      String(call.record.revision),
      '--not-applied',
      'no charge under this key',
      '--type',
      'CHARGE_NOT_FOUND',
      '--reason',
      'provider search: nothing',
      '--tenant',
      'acme',
      '--namespace',
      'prod',
      '--run-chain',
      call.runChainId,
    );
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("the activity's next attempt delivers a non-retryable failure CHARGE_NOT_FOUND: no charge under this key");
    expect((await stored(call.binding))!.result!.payload).toMatchObject({
      ok: false,
      error: { type: 'CHARGE_NOT_FOUND', message: 'no charge under this key' },
      resolvedInStore: { kind: 'not-applied' },
    });

    const other = await seed('uncertain');
    const plain = await cli(other.workflowId, 'act-3', '--run-chain', other.runChainId, '--revision', String(other.record.revision), '--not-applied', 'declined', '--reason', 'r');
    expect(plain.code).toBe(0);
    expect((await stored(other.binding))!.result!.payload).toMatchObject({ ok: false, error: { type: 'RESOLVED_NOT_APPLIED', message: 'declined' } });
  });

  it('a call that never ran is refused: exit 1 with the reason, nothing written', async () => {
    const call = await seed('ready');
    const out = await cli(call.workflowId, 'act-3', '--run-chain', call.runChainId, '--revision', String(call.record.revision), '--applied', '{}', '--reason', 'r');
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    expect(out.stderr).toMatch(/^INVALID_TRANSITION: .* is ready: it was never claimed, so it never ran and there is nothing to resolve/);
    expect(await stored(call.binding)).toEqual(call.record);
  });

  it('an already resolved call is refused, naming who resolved it and why', async () => {
    const call = await seed('uncertain');
    expect(
      (await cli(call.workflowId, 'act-3', '--run-chain', call.runChainId, '--revision', String(call.record.revision), '--applied', '1', '--reason', 'first', '--by', 'alice'))
        .code,
    ).toBe(0);
    const before = await stored(call.binding);
    const again = await cli(
      call.workflowId,
      'act-3',
      '--run-chain',
      call.runChainId,
      '--revision',
      String(before!.revision),
      '--not-applied',
      'no',
      '--reason',
      'second',
      '--by',
      'bob',
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^INVALID_TRANSITION: .* is completed: its result is already stored \(resolved in the store as applied by alice at .*: first\)/);
    expect(await stored(call.binding)).toEqual(before);
  });

  it('bad flags are refused with exit 1 and nothing is written: neither or both resolutions, --applied that is not JSON, --type without --not-applied, no --reason', async () => {
    const call = await seed('uncertain');
    const cases: Array<[string[], RegExp]> = [
      [['--reason', 'r'], /INVALID_ARGUMENT: choose exactly one of --applied <json>, --not-applied <message>/],
      [['--applied', '1', '--not-applied', 'x', '--reason', 'r'], /INVALID_ARGUMENT: choose exactly one/],
      [['--applied', '{not json', '--reason', 'r'], /INVALID_ARGUMENT: --applied must be JSON, got "\{not json"/],
      [['--applied', '1', '--type', 'X', '--reason', 'r'], /INVALID_ARGUMENT: --type goes with --not-applied/],
      [['--applied', '1'], /required option '--reason <text>' not specified/],
      [['--not-applied', 'x', '--type', 'bad type', '--reason', 'r'], /INVALID_ARGUMENT: resolution\.failed\.type must match/],
      [['--revision', '1.5', '--applied', '1', '--reason', 'r'], /INVALID_ARGUMENT: --revision must be the checkpoint revision/],
    ];
    for (const [flags, message] of cases) {
      const out = await cli(call.workflowId, 'act-3', '--run-chain', call.runChainId, '--revision', String(call.record.revision), ...flags);
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(message);
    }
    expect(await stored(call.binding)).toEqual(call.record);
  });

  it('a decision bound to a revision the checkpoint has moved on from is refused (FENCE_CONFLICT stale-decision), nothing written; no --revision is refused', async () => {
    const call = await seed('uncertain');
    const stale = await cli(
      call.workflowId,
      'act-3',
      '--run-chain',
      call.runChainId,
      '--revision',
      String(call.record.revision - 1),
      '--not-applied',
      'no',
      '--reason',
      'seen earlier',
    );
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(
      new RegExp(
        `^FENCE_CONFLICT: .*the decision was made on checkpoint revision ${call.record.revision - 1}, but the checkpoint is now at revision ${call.record.revision} \\(uncertain under attempt-1-dead`,
      ),
    );
    const missing = await runCli(['resolve-in-store', call.workflowId, 'act-3', '--run-chain', call.runChainId, '--applied', '1', '--reason', 'r'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TTC_STORE_URL: url,
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/required option '--revision <n>' not specified/);
    expect(await stored(call.binding)).toEqual(call.record);
  });

  it('a decision taken on one run chain never settles another that reuses the workflow id at the same revision: the run chain is required with the revision', async () => {
    const first = await seed('uncertain');
    const seen = first.record.revision;
    // Bob settles the first chain; its workflow ends; a new chain reuses the workflow id and its call is left at the same revision.
    expect(
      (await cli(first.workflowId, 'act-3', '--run-chain', first.runChainId, '--revision', String(seen), '--not-applied', 'declined', '--reason', 'bob checked', '--by', 'bob'))
        .code,
    ).toBe(0);
    const second = await seed('uncertain', 'default/default', first.workflowId);
    expect(second.record.revision).toBe(seen);

    // Carol submits the decision she prepared on the first chain's row.
    const withChain = await cli(
      first.workflowId,
      'act-3',
      '--run-chain',
      first.runChainId,
      '--revision',
      String(seen),
      '--applied',
      '{"chargeId":"ch_A"}',
      '--reason',
      'carol saw ch_A',
      '--by',
      'carol',
    );
    const withoutChain = await runCli(
      ['resolve-in-store', first.workflowId, 'act-3', '--revision', String(seen), '--applied', '{"chargeId":"ch_A"}', '--reason', 'carol saw ch_A'],
      { PATH: process.env.PATH, HOME: process.env.HOME, TTC_STORE_URL: url },
    );
    const byApi = await resolveCallInStore(store, {
      namespace: 'default',
      workflowId: first.workflowId,
      callId: 'act-3',
      resolution: { applied: { chargeId: 'ch_A' } },
      reason: 'carol saw ch_A',
      resolvedBy: 'carol',
      expectedRevision: seen,
    }).catch((e: { code?: string }) => e.code);

    expect([withChain.code, withChain.stderr.split(':')[0]]).toEqual([1, 'FENCE_CONFLICT']);
    expect([withoutChain.code, /required option '--run-chain <runId>' not specified/.test(withoutChain.stderr)]).toEqual([1, true]);
    expect(byApi).toBe('INVALID_ARGUMENT');
    expect(await stored(second.binding)).toEqual(second.record);
  });

  it('prints what the store and the person supplied terminal-safe: escape sequences and bidi controls are shown escaped, never raw', async () => {
    const call = await seed('uncertain');
    const out = await cli(
      call.workflowId,
      'act-3',
      '--run-chain',
      call.runChainId,
      '--revision',
      String(call.record.revision),
      '--applied',
      JSON.stringify({ note: `ok${ESC}]0;pwned\u0007 \u202egnp.exe` }),
      '--reason',
      `saw it${ESC}[2J`,
      '--by',
      'mallory',
    );
    expect(out.code).toBe(0);
    expect(out.stdout).not.toMatch(/[\u001b\u0007\u202e]/);
    expect(out.stdout).toContain('reason: saw it\\u001b[2J');
    expect(out.stdout).toContain('resolved by: mallory at');
    expect(out.stdout).toContain('\\u202egnp.exe');
    // Stored as given: the escaping is only for the terminal.
    expect((await stored(call.binding))!.result!.payload).toMatchObject({ resolvedInStore: { reason: `saw it${ESC}[2J`, by: 'mallory' } });
  });

  it.each([
    ['a bidi override that makes it read as another name', '\u202eecila'],
    ['only invisible characters', '\u200b\u2060'],
    ['a no-break space that looks like a space', 'alice\u00a0smith'],
    ['only spaces', '   '],
  ])('refuses a --by with %s (INVALID_ARGUMENT, exit 1) and leaves the checkpoint as it was', async (_what, by) => {
    const call = await seed('uncertain');
    const out = await cli(
      call.workflowId,
      'act-3',
      '--run-chain',
      call.runChainId,
      '--revision',
      String(call.record.revision),
      '--not-applied',
      'no',
      '--reason',
      'checked the ledger',
      '--by',
      by,
    );
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^INVALID_ARGUMENT: resolvedBy: /);
    expect(await stored(call.binding)).toEqual(call.record);
  });
});
