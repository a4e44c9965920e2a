/**
 * The Temporal dev server's frontend request counters, read from its Prometheus endpoint
 * (`--metrics-port`): requests per operation, for bench:overhead's requests per call.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** The server's frontend request counters by operation (`service_requests{service_name="frontend"}`). */
export async function frontendRequests(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const counts = new Map<string, number>();
  for (const match of text.matchAll(/^service_requests\{([^}]*)\} (\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/gm)) {
    const labels = match[1]!;
    if (!labels.includes('service_name="frontend"')) continue;
    const op = /operation="([^"]+)"/.exec(labels)?.[1] ?? '?';
    counts.set(op, (counts.get(op) ?? 0) + Number(match[2]));
  }
  return counts;
}

/** {@link frontendRequests} once two reads a second apart agree (the server reports its counters periodically). */
export async function settledFrontendRequests(url: string): Promise<Map<string, number>> {
  let last = await frontendRequests(url);
  for (;;) {
    await sleep(1_000);
    const now = await frontendRequests(url);
    if (sum(now) === sum(last)) return now;
    last = now;
  }
}

/** The frontend operation that ends a workflow task: one per workflow task, however many activity results it took in. */
export const WORKFLOW_TASK = 'RespondWorkflowTaskCompleted';

export const sum = (m: ReadonlyMap<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
