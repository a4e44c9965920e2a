/**
 * What the plugin tells its workflow interceptor module about the activities it fences, shared
 * by the plugin (Node) and the interceptor (sandbox). Workflow code cannot be given options, so
 * the plugin adds the module with a query (`<module>?<query>`) and the bundler hands the module
 * its query (webpack's `__resourceQuery`). Node-free: imports nothing.
 */

/** The defaults a fenced activity is scheduled with when the workflow set none. */
export interface SchedulingDefaults {
  /** The activity types the plugin fences (its `fence` entries and its `tools`). */
  readonly fencedTypes: readonly string[];
  /** The heartbeat timeout, ms, given to a fenced activity scheduled without `heartbeatTimeout`. */
  readonly heartbeatTimeoutMs: number;
}

/** `defaults` as the query of the interceptor module's request: `?ttc=<URI-encoded JSON>`. */
export function schedulingDefaultsQuery(defaults: SchedulingDefaults): string {
  return `?ttc=${encodeURIComponent(JSON.stringify(defaults))}`;
}

/**
 * The defaults in a module request's query (see {@link schedulingDefaultsQuery}); null for a
 * module added without them (an older bundle, another bundler) or a query that does not parse.
 */
export function parseSchedulingDefaults(query: string | undefined): SchedulingDefaults | null {
  const match = /^\?ttc=([^&]*)$/.exec(query ?? '');
  if (match === null) return null;
  try {
    const value = JSON.parse(decodeURIComponent(match[1]!)) as Partial<SchedulingDefaults> | null;
    const { fencedTypes, heartbeatTimeoutMs } = value ?? {};
    if (!Array.isArray(fencedTypes) || !fencedTypes.every((t) => typeof t === 'string')) return null;
    if (typeof heartbeatTimeoutMs !== 'number' || !Number.isSafeInteger(heartbeatTimeoutMs) || heartbeatTimeoutMs <= 0) return null;
    return { fencedTypes, heartbeatTimeoutMs };
  } catch {
    return null;
  }
}
