/**
 * Traces and metrics: `ttc worker --metrics-port` serves Prometheus text with the
 * fence's counters. A real worker process (the weather tools, the scripted model) on a real dev
 * server runs one agent run; the test then scrapes `/metrics` as Prometheus would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient, scriptedRunInput, startAgentRun } from '../../src/client';
import { resolveConfig } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { metricsEndpoint, metricsHost, metricsPort, metricsUrl, prometheusMetrics } from '../../src/cli/worker-metrics';
import { ROOT } from '../helpers/cli';
import { onFreePort } from '../helpers/free-port';
import { rejectCall } from '../../src/operator/run-decisions';
import { runStatusQuery } from '../../src/workflows/agent/messages';

jest.setTimeout(120_000);

/** Spawns `ttc worker <args>` (as src/dev/worker-process.ts does) and resolves with its banner once it polls. */
async function spawnWorker(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; banner: string }> {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), join(ROOT, 'src/cli/index.ts'), 'worker', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const banner = await new Promise<string>((done, fail) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((l) => l.includes('polling task queue'));
      if (line !== undefined) done(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`ttc worker exited (${code}) before it polled:\n${output}`)));
  });
  return { child, banner };
}

/** The samples of `metric` in Prometheus text whose labels include all of `labels`, summed. */
function sample(text: string, metric: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$/.exec(line);
    if (match === null || match[1] !== metric) continue;
    const found = Object.fromEntries([...match[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) total += Number(match[3]);
  }
  return total;
}

describe('ttc worker --metrics-port', () => {
  let dir: string;
  let server: DevServer;
  let worker: ChildProcess | undefined;
  let port: number;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-metrics-'));
    server = await startDevServer();
  });

  afterAll(async () => {
    if (worker !== undefined && worker.exitCode === null) {
      const exited = new Promise((done) => worker!.once('exit', done));
      worker.kill('SIGTERM');
      await exited;
    }
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves Prometheus text with the fence's counters after an agent run: ttc_tool_calls by source, store latency per operation", async () => {
    env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'metrics-e2e',
      TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
      WEATHER_LOG: join(dir, 'readings.jsonl'),
    };
    const started = await onFreePort((free) => {
      port = free;
      return spawnWorker(['--identity', 'metrics-worker', '--tools', join(ROOT, 'examples/weather/tools.ts'), '--models', 'scripted', '--metrics-port', String(port)], env);
    });
    worker = started.child;
    expect(started.banner).toContain(`metrics: http://127.0.0.1:${port}/metrics (Prometheus)`);

    const config = resolveConfig({}, { ...process.env, ...env });
    const { client, close } = await connectClient(config);
    let result;
    try {
      const transcript = JSON.parse(readFileSync(join(ROOT, 'examples/weather/transcript.json'), 'utf8')) as unknown;
      result = await (await startAgentRun(client, config, scriptedRunInput(config, transcript), 'metrics-run')).result();
    } finally {
      await close();
    }
    expect(result.calls.map((c) => [c.toolName, c.status, c.source])).toEqual([['record_reading', 'completed', 'executed']]);

    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    // The activity context's meter adds the SDK's activity tags (camelCase: activityType, taskQueue, namespace).
    expect(sample(text, 'ttc_tool_calls', { source: 'executed', activityType: 'record_reading', taskQueue: 'metrics-e2e' })).toBe(1);
    expect(sample(text, 'ttc_store_operation_latency_count', { operation: 'createIfAbsent' })).toBe(1);
    expect(sample(text, 'ttc_store_operation_latency_count', { operation: 'compareAndSwap' })).toBe(1);
    // `ttc worker` installs store-latency buckets below Temporal's default 50 ms.
    expect(text).toMatch(/^ttc_store_operation_latency_bucket\{.*le="0\.25".*\} \d+$/m);
    // The SDK's own metrics are served beside them.
    expect(text).toMatch(/^temporal_activity_execution_latency_count\{/m);
  });

  it('counts a person\'s decision on the workflow\'s meter: ttc_approval_decisions{decision="rejected", tool}', async () => {
    expect(worker).toBeDefined();
    const config = resolveConfig({}, { ...process.env, ...env });
    const { client, close } = await connectClient(config);
    try {
      const transcript = JSON.parse(readFileSync(join(ROOT, 'examples/weather/transcript.json'), 'utf8')) as unknown;
      const handle = await startAgentRun(
        client,
        config,
        scriptedRunInput(config, transcript, { approvalRequired: { record_reading: { expiresAfterMs: 600_000 } } }),
        'metrics-approval-run',
      );
      let waiting;
      for (let i = 0; waiting === undefined; i++) {
        const status = await handle.query(runStatusQuery);
        waiting = status.pendingCalls.find((c) => c.status === 'awaiting-approval');
        if (waiting === undefined) {
          if (i > 200) throw new Error(`no call awaits approval: ${JSON.stringify(status.pendingCalls)}`);
          await new Promise((done) => setTimeout(done, 100));
        }
      }
      await rejectCall(handle, { callId: waiting.callId, reason: 'not today' });
      const result = await handle.result();
      expect(result.calls.map((c) => [c.toolName, c.status])).toEqual([['record_reading', 'rejected']]);
    } finally {
      await close();
    }
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sample(text, 'ttc_approval_decisions', { decision: 'rejected', tool: 'record_reading', workflowType: 'agentWorkflow' })).toBe(1);
    expect(sample(text, 'ttc_approval_decisions', { decision: 'approved' })).toBe(0);
  });
});

describe('the metrics options of ttc worker', () => {
  it('refuse a port outside 1..65535, a host name instead of an IP address, and --metrics-host without --metrics-port: INVALID_ARGUMENT naming the option', () => {
    for (const [parse, value, field] of [
      [metricsPort, '0', '--metrics-port'],
      [metricsPort, '65536', '--metrics-port'],
      [metricsPort, '9464.5', '--metrics-port'],
      [metricsHost, 'localhost', '--metrics-host'],
    ] as const) {
      expect(() => parse(value)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', details: { field } }));
    }
    expect(() => metricsEndpoint({ metricsHost: '0.0.0.0' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', details: { field: '--metrics-host' } }));
  });

  it('bind loopback by default and put an IPv6 host in brackets', () => {
    expect(metricsEndpoint({})).toBeUndefined();
    expect(metricsUrl(metricsEndpoint({ metricsPort: 9464 })!)).toBe('http://127.0.0.1:9464/metrics');
    const ipv6 = metricsEndpoint({ metricsPort: 9464, metricsHost: metricsHost('::1') })!;
    expect(metricsUrl(ipv6)).toBe('http://[::1]:9464/metrics');
    expect(prometheusMetrics(ipv6)).toMatchObject({ prometheus: { bindAddress: '[::1]:9464' } });
  });
});
