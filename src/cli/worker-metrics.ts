/**
 * `ttc worker --metrics-port <port> [--metrics-host <ip>]`: the worker's Temporal runtime serves
 * its metrics as Prometheus text at `http://<host>:<port>/metrics`, the SDK's own
 * (`temporal_…`) and the fence's (`ttc_…`, see `../telemetry/fence-metrics`).
 */
import { isIP } from 'node:net';
import type { MetricsExporterConfig } from '@temporalio/worker';
import { CheckpointError } from '../checkpoint/errors';
import { FENCE_METRICS, STORE_LATENCY_BUCKETS_MS } from '../telemetry/fence-metrics';

/** `--metrics-host` when only `--metrics-port` is given: loopback, so metrics are not exposed beyond the machine unless asked. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** Where the worker serves its metrics. */
export interface MetricsEndpoint {
  /** An IP address (Temporal's runtime binds a socket address, not a host name). */
  readonly host: string;
  /** 1 to 65,535. */
  readonly port: number;
}

/**
 * Parses `--metrics-port`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `--metrics-port`) unless an integer from 1 to 65,535.
 */
export function metricsPort(value: string): number {
  const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(port) || port < 1 || port > 65_535) {
    throw new CheckpointError('INVALID_ARGUMENT', `--metrics-port must be a TCP port from 1 to 65535, got ${JSON.stringify(value)}`, { field: '--metrics-port' });
  }
  return port;
}

/**
 * Parses `--metrics-host`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `--metrics-host`) unless an IPv4 or IPv6 address (not a host name).
 */
export function metricsHost(value: string): string {
  if (isIP(value) === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `--metrics-host must be an IP address such as 127.0.0.1, 0.0.0.0 or ::1 (not a host name), got ${JSON.stringify(value)}`, {
      field: '--metrics-host',
    });
  }
  return value;
}

/**
 * The metrics endpoint of `ttc worker`'s options, or undefined without `--metrics-port`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `--metrics-host`) when `--metrics-host` is given without `--metrics-port`.
 */
export function metricsEndpoint(options: { readonly metricsPort?: number; readonly metricsHost?: string }): MetricsEndpoint | undefined {
  if (options.metricsPort === undefined) {
    if (options.metricsHost !== undefined) throw new CheckpointError('INVALID_ARGUMENT', '--metrics-host needs --metrics-port', { field: '--metrics-host' });
    return undefined;
  }
  return { host: options.metricsHost ?? DEFAULT_METRICS_HOST, port: options.metricsPort };
}

/** The URL Prometheus scrapes: `http://<host>:<port>/metrics` (an IPv6 host in brackets). */
export function metricsUrl(endpoint: MetricsEndpoint): string {
  return `http://${hostPort(endpoint)}/metrics`;
}

/**
 * The runtime's metrics option (`Runtime.install({ telemetryOptions: { metrics } })`): a
 * Prometheus exporter bound to `endpoint`, with store-latency buckets fit for sub-millisecond
 * operations (Temporal's defaults start at 50 ms).
 */
export function prometheusMetrics(endpoint: MetricsEndpoint): MetricsExporterConfig {
  return {
    prometheus: {
      bindAddress: hostPort(endpoint),
      histogramBucketOverrides: { [FENCE_METRICS.STORE_OPERATION_LATENCY]: [...STORE_LATENCY_BUCKETS_MS] },
    },
  };
}

function hostPort({ host, port }: MetricsEndpoint): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}
