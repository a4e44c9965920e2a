/**
 * Rule (README: "The UI signs with signFencedCallApproval ... (the workflow is not trusted)";
 * docs/protocol.md#approval-grants "What is signed is what the person is shown"): the approval UI
 * reads the description from workflow A (its handle, its namespace) and the person approves A's
 * call. signFencedCallApproval signs whatever namespace / tenant / workflowId / runChainId / callId
 * the description's approvalRequest reports, and takes nothing to check them against, so workflow A
 * (or anything that edits the description on its way) gets a grant that runs the call in workflow B
 * of another tenant.
 */
import { signFencedCallApproval } from '../../src/operator/approval-grants';
import { verifyApprovalGrant } from '../../src/checkpoint/approval-grant';
import { intentDigest } from '../../src/checkpoint/digest';
import { KEY } from './harness';

test('a description from workflow A whose request names workflow B of another tenant is not signed', () => {
  const NOW = new Date('2026-03-01T10:00:00.000Z');
  const args = [{ orderId: '1001', amountCents: 4_200 }];
  const digest = intentDigest({ toolName: 'chargeCard', toolRevision: 'v1', args: { args }, target: null });
  // What the UI got from workflow "checkout-acme" (tenant acme) — with the request pointing elsewhere.
  const elsewhere = { namespace: 'payments', tenant: 'globex', workflowId: 'payroll-globex', runChainId: 'run-b', callId: 'charge-b', toolName: 'chargeCard', intentDigest: digest };
  const shown = { activityType: 'chargeCard', toolRevision: 'v1', intentDigest: digest, arguments: args, approvalRequest: elsewhere };
  let grant: string | null = null;
  try {
    grant = signFencedCallApproval(shown, { approver: 'bob', key: KEY, now: NOW });
  } catch {
    grant = null;
  }
  if (grant !== null) {
    // The grant runs workflow B's call at B's fence.
    expect(verifyApprovalGrant(grant, elsewhere, [KEY], NOW.getTime())).toMatchObject({ workflowId: 'payroll-globex', tenant: 'globex' });
  }
  // There is no way to tell signFencedCallApproval "the person was shown workflow checkout-acme in namespace default":
  expect(grant).toBeNull();
});
