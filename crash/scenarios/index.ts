/** Every crash scenario, in report order. */
import type { Scenario } from '../scenario';
import { windowScenarios } from './windows';

export const SCENARIOS: readonly Scenario[] = [...windowScenarios];
