/**
 * The crash windows of docs/protocol.md#crash-windows, one scenario per row and tool kind, plus the
 * batch of three calls in one model turn. Tools: `create_ticket` (lookup by key and provider
 * dedupe), `create_ticket_by_key` (provider dedupe only), `create_ticket_lookup` (lookup only:
 * every execution is one more ticket), `send_email` (neither: every run of it sends one more email,
 * so the provider's outbox counts tool executions).
 */
import { emailCall, ticketCall } from '../transcripts';
import { crashWindowScenario } from './crash-window';

export const windowScenarios = [
  crashWindowScenario({
    id: 'before-claim',
    title: 'kill before the claim (send_email)',
    expected: 'executes exactly once: one email, source executed, no pause',
    crashAt: { point: 'before-claim', toolName: 'send_email' },
    calls: (tag) => [emailCall(tag, 1)],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'executed' }],
  }),
  crashWindowScenario({
    id: 'after-claim-lookup',
    title: 'kill after the claim, before the tool ran (create_ticket, lookup and key dedupe)',
    expected:
      'lookup finds nothing; the provider deduplicates by key, so the call is repeated at once with the same key (docs/protocol.md#reconciliation): one ticket, source same-key-repeat',
    crashAt: { point: 'after-claim', toolName: 'create_ticket' },
    calls: (tag) => [ticketCall(tag, 1)],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'same-key-repeat' }],
  }),
  crashWindowScenario({
    id: 'after-claim-lookup-only',
    title: 'kill after the claim, before the tool ran (create_ticket_lookup: lookup, no key dedupe)',
    expected:
      'the next attempts wait (RECONCILE_PENDING) until the claim settles (claimedAt + callDeadlineMs + margin); then lookup proves absence, the fence is taken over and the call runs once more under the same key: one ticket, source executed',
    crashAt: { point: 'after-claim', toolName: 'create_ticket_lookup' },
    calls: (tag) => [ticketCall(tag, 1, 'create_ticket_lookup')],
    crashedCall: 0,
    settles: true,
    expectCalls: [{ status: 'completed', source: 'executed' }],
  }),
  crashWindowScenario({
    id: 'after-claim-no-lookup',
    title: 'kill after the claim, before the tool ran (send_email, no lookup)',
    expected: 'pauses as OUTCOME_UNKNOWN, not before the claim settles; the operator finds no email and resolves absent; it runs once more: one email',
    crashAt: { point: 'after-claim', toolName: 'send_email' },
    calls: (tag) => [emailCall(tag, 1)],
    crashedCall: 0,
    settles: true,
    pause: 'absent',
    expectCalls: [
      { status: 'resolved-absent', source: null },
      { status: 'completed', source: 'executed' },
    ],
  }),
  crashWindowScenario({
    id: 'after-effect-lookup',
    title: 'kill after the effect, before the result was stored (create_ticket, lookup)',
    expected: 'lookup finds the receipt: one ticket, source lookup',
    crashAt: { point: 'after-effect', toolName: 'create_ticket' },
    calls: (tag) => [ticketCall(tag, 1)],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'lookup' }],
  }),
  crashWindowScenario({
    id: 'after-effect-same-key',
    title: 'kill after the effect, before the result was stored (create_ticket_by_key, key dedupe only)',
    expected: 'repeated with the same key, the provider replays the receipt: one ticket, source same-key-repeat',
    crashAt: { point: 'after-effect', toolName: 'create_ticket_by_key' },
    calls: (tag) => [ticketCall(tag, 1, 'create_ticket_by_key')],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'same-key-repeat' }],
  }),
  crashWindowScenario({
    id: 'after-effect-no-lookup',
    title: 'kill after the effect, before the result was stored (send_email, neither)',
    expected: 'pauses as OUTCOME_UNKNOWN, not before the claim settles, and never runs again by itself; the operator finds the email and resolves applied: one email',
    crashAt: { point: 'after-effect', toolName: 'send_email' },
    calls: (tag) => [emailCall(tag, 1)],
    crashedCall: 0,
    settles: true,
    pause: 'applied',
    expectCalls: [{ status: 'resolved-applied', source: 'resolution' }],
  }),
  crashWindowScenario({
    id: 'after-result-stored',
    title: 'kill after the result was stored, before delivery (send_email)',
    expected: 'delivered from the store, the tool is not called again: one email, source store',
    crashAt: { point: 'after-result-stored', toolName: 'send_email' },
    calls: (tag) => [emailCall(tag, 1)],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'store' }],
  }),
  crashWindowScenario({
    id: 'after-delivery-claimed',
    title: 'kill after delivery was claimed (send_email)',
    expected: 'delivery released and redelivered from the store, the tool is not called again: one email, source store',
    crashAt: { point: 'after-delivery-claimed', toolName: 'send_email' },
    calls: (tag) => [emailCall(tag, 1)],
    crashedCall: 0,
    expectCalls: [{ status: 'completed', source: 'store' }],
  }),
  crashWindowScenario({
    id: 'batch-of-three',
    title: 'three calls in one model turn, kill after the effects of the first two (create_ticket ×2, send_email)',
    expected:
      'the first is delivered before the kill, the second recovered by lookup (source lookup, or store when the attempt that looked it up stored it but its completion reached Temporal after its heartbeat timeout), only the third executes after the kill: three effects',
    crashAt: { point: 'after-effect', toolName: 'create_ticket', occurrence: 2 },
    calls: (tag) => [ticketCall(tag, 1), ticketCall(tag, 2), emailCall(tag, 3)],
    crashedCall: 1,
    expectCalls: [
      { status: 'completed', source: 'executed' },
      { status: 'completed', source: ['lookup', 'store'] },
      { status: 'completed', source: 'executed' },
    ],
  }),
];
