/** Every crash scenario, in report order. */
import type { Scenario } from '../scenario';
import { repeatedDeliveryScenario } from './repeated-delivery';
import { serverRestartScenario } from './server-restart';
import { staleAttemptScenario } from './stale-attempt';
import { storeOutageScenario } from './store-outage';
import { windowScenarios } from './windows';

export const SCENARIOS: readonly Scenario[] = [...windowScenarios, staleAttemptScenario, repeatedDeliveryScenario, serverRestartScenario, storeOutageScenario];
