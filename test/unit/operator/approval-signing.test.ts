/**
 * The approve paths sign what the person is shown, never what a run reports
 * (docs/protocol.md#approval-grants): the digest of a grant is computed from the tool, revision,
 * validated arguments and target shown; a run (workflow code) that reports a digest of other
 * arguments, or a far expiry, gets nothing signed, or a grant capped at 15 minutes.
 */
import { verifyApprovalGrant } from '../../../src/checkpoint/approval-grant';
import { intentDigest } from '../../../src/checkpoint/digest';
import { CheckpointError } from '../../../src/checkpoint/errors';
import type { JsonValue } from '../../../src/checkpoint/types';
import { DEFAULT_GRANT_TTL_MS, signAgentApproval, signFencedCallApproval } from '../../../src/operator/approval-grants';
import type { WaitingCall } from '../../../src/operator/run-decisions';

const KEY = { keyId: 'ops', hmacSecret: Buffer.from('1f7c3a9e5d2b8046c1e7a39d5b0f2a8e6c4d1b7a9e3f5c2d8a6b0e4f7c1d9a35', 'hex') };
const NOW = new Date('2026-12-06T12:00:00.000Z');
const digestOf = (args: JsonValue) => intentDigest({ toolName: 'refund', toolRevision: 'v1', args, target: null });

/** A call awaiting approval as a run reports it: `shown` arguments, the digest of `digested`, its approval expiry. */
function waiting(shown: JsonValue, digested: JsonValue, approvalExpiresAt: string): WaitingCall {
  return {
    workflowId: 'wf-1',
    status: { tenant: 'acme', runChainId: 'chain-1', stateVersion: 3, pendingCalls: [], calls: [] } as never,
    call: {
      callId: 'toolu_1',
      toolName: 'refund',
      toolRevision: 'v1',
      status: 'awaiting-approval',
      arguments: shown,
      target: null,
      modelInput: shown,
      intentDigest: digestOf(digested),
      approvalExpiresAt,
    } as never,
  };
}

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof CheckpointError) return error.code;
    throw error;
  }
  return 'signed';
}

describe('signing an agent run’s approval', () => {
  const shown = { orderId: 'o-1', amountCents: 500 };

  it('refuses to sign when the run reports the digest of arguments other than those shown (or the person reviewed another)', () => {
    const lying = waiting(shown, { orderId: 'o-1', amountCents: 500_000 }, '2026-12-06T13:00:00.000Z');
    expect(codeOf(() => signAgentApproval(lying, { namespace: 'default', intentDigest: lying.call.intentDigest!, approver: 'alice', key: KEY, now: NOW }))).toBe(
      'APPROVAL_MISMATCH',
    );
    const honest = waiting(shown, shown, '2026-12-06T13:00:00.000Z');
    expect(
      codeOf(() => signAgentApproval(honest, { namespace: 'default', intentDigest: digestOf({ orderId: 'o-2', amountCents: 500 }), approver: 'alice', key: KEY, now: NOW })),
    ).toBe('APPROVAL_MISMATCH');
  });

  it('signs the digest of what is shown, expiring at the call’s approval expiry or after 15 minutes, whichever is first', () => {
    const soon = waiting(shown, shown, '2026-12-06T12:05:00.000Z');
    const far = waiting(shown, shown, '2099-01-01T00:00:00.000Z');
    const call = { namespace: 'default', tenant: 'acme', workflowId: 'wf-1', runChainId: 'chain-1', callId: 'toolu_1', toolName: 'refund', intentDigest: digestOf(shown) };
    const expiry = (w: WaitingCall) =>
      verifyApprovalGrant(signAgentApproval(w, { namespace: 'default', intentDigest: digestOf(shown), approver: 'alice', key: KEY, now: NOW }), call, [KEY], NOW.getTime())
        .expiresAt;
    expect(expiry(soon)).toBe('2026-12-06T12:05:00.000Z');
    expect(Date.parse(expiry(far)) - NOW.getTime()).toBe(DEFAULT_GRANT_TTL_MS);
    expect(
      codeOf(() =>
        signAgentApproval(waiting(shown, shown, '2026-12-06T11:59:59.000Z'), { namespace: 'default', intentDigest: digestOf(shown), approver: 'alice', key: KEY, now: NOW }),
      ),
    ).toBe('INVALID_ARGUMENT');
  });

  it('refuses a run that reports another run chain than the server describes', () => {
    const w = waiting(shown, shown, '2026-12-06T13:00:00.000Z');
    expect(codeOf(() => signAgentApproval(w, { namespace: 'default', runChainId: 'chain-2', intentDigest: digestOf(shown), approver: 'alice', key: KEY, now: NOW }))).toBe(
      'APPROVAL_MISMATCH',
    );
    expect(codeOf(() => signAgentApproval(w, { namespace: 'default', runChainId: 'chain-1', intentDigest: digestOf(shown), approver: 'alice', key: KEY, now: NOW }))).toBe(
      'signed',
    );
  });

  it('refuses a run of older code that reports no arguments or run chain: nothing to bind the grant to', () => {
    const older = waiting(shown, shown, '2026-12-06T13:00:00.000Z');
    const noArgs = { ...older, call: { ...older.call, arguments: null } };
    const noChain = { ...older, status: { ...older.status, runChainId: undefined } };
    for (const w of [noArgs, noChain] as WaitingCall[]) {
      expect(codeOf(() => signAgentApproval(w, { namespace: 'default', intentDigest: digestOf(shown), approver: 'alice', key: KEY, now: NOW }))).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('signing a fenced call’s approval (the plugin)', () => {
  const args = [{ orderId: '1001', amountCents: 4_200 }];
  const digest = intentDigest({ toolName: 'chargeCard', toolRevision: 'v1', args: { args }, target: null });
  const request = { namespace: 'default', tenant: 'default', workflowId: 'order-1001', runChainId: 'run-1', callId: 'charge-1001', toolName: 'chargeCard', intentDigest: digest };
  const shown = { activityType: 'chargeCard', toolRevision: 'v1', intentDigest: digest, arguments: args, approvalRequest: request };
  const RUN = { namespace: 'default', workflowId: 'order-1001', runChainId: 'run-1' };

  it('signs the description as shown', () => {
    const grant = signFencedCallApproval(shown, { approver: 'bob', key: KEY, now: NOW, run: RUN });
    expect(verifyApprovalGrant(grant, request, [KEY], NOW.getTime())).toMatchObject({ callId: 'charge-1001', approver: 'bob' });
  });

  it('refuses other arguments than the digest covers, a request for another activity, and a description without a request', () => {
    expect(codeOf(() => signFencedCallApproval({ ...shown, arguments: [{ orderId: '1001', amountCents: 420_000 }] }, { approver: 'bob', key: KEY, now: NOW, run: RUN }))).toBe(
      'APPROVAL_MISMATCH',
    );
    expect(
      codeOf(() =>
        signFencedCallApproval({ ...shown, approvalRequest: { ...request, intentDigest: `sha256:${'0'.repeat(64)}` } }, { approver: 'bob', key: KEY, now: NOW, run: RUN }),
      ),
    ).toBe('APPROVAL_MISMATCH');
    expect(codeOf(() => signFencedCallApproval({ ...shown, approvalRequest: { ...request, toolName: 'refundCard' } }, { approver: 'bob', key: KEY, now: NOW, run: RUN }))).toBe(
      'APPROVAL_MISMATCH',
    );
    // A request naming another run than the one queried (namespace, workflow or run chain).
    for (const other of [{ namespace: 'payments' }, { workflowId: 'payroll' }, { runChainId: 'run-2' }]) {
      expect(codeOf(() => signFencedCallApproval({ ...shown, approvalRequest: { ...request, ...other } }, { approver: 'bob', key: KEY, now: NOW, run: RUN }))).toBe(
        'APPROVAL_MISMATCH',
      );
    }
    const { approvalRequest: _request, ...bare } = shown;
    expect(codeOf(() => signFencedCallApproval(bare, { approver: 'bob', key: KEY, now: NOW, run: RUN }))).toBe('INVALID_ARGUMENT');
  });
});
