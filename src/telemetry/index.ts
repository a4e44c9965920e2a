/**
 * `temporal-tool-checkpoint/telemetry`: the fence's span and metric names, its heartbeat
 * details, and the store-latency buckets to give your own Temporal runtime's metrics exporter.
 */
export { TRACER_NAME } from './attempt-telemetry';
export { FENCE_METRICS, STORE_LATENCY_BUCKETS_MS } from './fence-metrics';
export type { FenceHeartbeatDetails, FencePhase } from './heartbeat-details';
