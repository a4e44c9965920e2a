/**
 * Shapes of the agent workflow: its input (`./input-types`) and result (`./result-types`), the
 * status query's view and the payloads of its signals and updates (`./message-types`), in one
 * place. Type-only and sandbox-safe.
 *
 * Units: every duration is in ms; every timestamp is an ISO-8601 UTC string named `…At`, taken
 * from workflow time.
 *
 * @see docs/protocol.md#agent-workflow
 */
export * from './input-types';
export * from './result-types';
export * from './message-types';
