/** Every crash scenario, in report order. */
import type { Scenario } from '../scenario';
import { repeatedDeliveryScenario } from './repeated-delivery';
import { serverRestartScenario } from './server-restart';
import { staleAttemptScenario } from './stale-attempt';
import { storeOutageScenario } from './store-outage';
import { windowScenarios } from './windows';
import { zombieScenarios } from './zombie';
import { redeployScenarios } from './redeploy';
import { storeOutageAfterClaimScenario } from './store-outage-after-claim';
import { approvalExpiryScenario } from './approval-expiry';
import { batchScenarios } from './batch';
import { compensationScenarios } from './compensation';
import { resetScenarios } from './reset';

/**
 * The overlap, deploy and outage scenarios (docs/protocol.md#overlapping-attempts to
 * #integrity-and-rotation): a claim that must settle before a lookup-only tool is
 * reconciled, zombie attempts, deploys, outages and approval expiry between attempts.
 */
export const BETWEEN_ATTEMPTS_SCENARIOS: readonly Scenario[] = [
  windowScenarios.find((s) => s.id === 'after-claim-lookup-only')!,
  ...zombieScenarios,
  ...redeployScenarios,
  storeOutageAfterClaimScenario,
  approvalExpiryScenario,
];

/** The batch and saga scenarios: a batch of 100 notifications (kill after item 20, cancellation after item 19 / 20) and the order saga's compensations. */
export const BATCH_AND_SAGA_SCENARIOS: readonly Scenario[] = [...batchScenarios, ...compensationScenarios];

export const SCENARIOS: readonly Scenario[] = [
  ...windowScenarios,
  staleAttemptScenario,
  repeatedDeliveryScenario,
  serverRestartScenario,
  storeOutageScenario,
  ...BETWEEN_ATTEMPTS_SCENARIOS.filter((s) => !windowScenarios.includes(s)),
  ...BATCH_AND_SAGA_SCENARIOS,
  ...resetScenarios,
];
