/**
 * Fleet behaviour with real worker processes (docs/protocol.md#client-and-fleet): SIGTERM shuts a
 * worker down gracefully, letting a running tool call finish and report; another worker on the
 * same task queue and store carries the run on. A worker SIGKILLed mid-call is noticed by the tool
 * activity's default heartbeat timeout.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { connectClient, scriptedRunInput, startAgentRun } from '../../src/client';
import { resolveConfig } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { spawnWorker, type WorkerProcess } from '../../src/dev/worker-process';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { temporal } from '@temporalio/proto';
import { DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS } from '../../src/activities/contract/contract';

jest.setTimeout(180_000);

describe('a worker of the fleet', () => {
  let dir: string;
  let server: DevServer;
  let provider: RunningProvider;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-fleet-'));
    server = await startDevServer();
    provider = await startProvider({ dbFile: join(dir, 'provider.db'), faults: true, stderr: 'ignore' });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await provider?.stop();
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  /** A worker's environment on `taskQueue` with a SQLite store file in the test's folder, and the configuration it resolves to. */
  const fleet = (taskQueue: string, storeFile: string, extra: Record<string, string> = {}) => {
    const env = { TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, TTC_STORE_URL: `sqlite:${join(dir, storeFile)}`, TTC_PROVIDER_URL: provider.url, ...extra };
    return { env, config: resolveConfig({}, { ...process.env, ...env }) };
  };
  const ticketTranscript = (): unknown => JSON.parse(readFileSync(join(__dirname, '../../examples/transcripts/anthropic-ticket.json'), 'utf8'));

  it('finishes its running tool call on SIGTERM, exits 0, and another worker completes the run without a second effect', async () => {
    // At least the demo tools' call deadline (30 s) plus the margin: the configuration refuses less.
    const { env, config } = fleet('fleet-shutdown', 'checkpoints.db', { TTC_SHUTDOWN_GRACE_TIME: '40s' });
    // The provider holds every mutating request for 3 s, so the tool is mid-call when SIGTERM arrives.
    await provider.client.setFaults({ delayMs: 3_000, pathPrefix: '/tickets' });
    const first = await spawnWorker({ env, identity: 'worker-graceful' });
    workers.push(first);
    const { client, close } = await connectClient(config);
    try {
      const handle = await startAgentRun(client, config, scriptedRunInput(config, ticketTranscript()), `fleet-shutdown-${Date.now()}`);
      // The claim is durable before the tool runs: once the checkpoint is executing, the tool is mid-call.
      const store = await openCheckpointStore(config.store.url);
      try {
        await waitFor(async () => (await store.listByStatus(['executing'])).length === 1);
      } finally {
        await store.close();
      }
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect((await provider.client.effects()).byKind['ticket.create']).toBe(1);

      await provider.client.clearFaults();
      workers.push(await spawnWorker({ env, identity: 'worker-successor' }));
      const result = await handle.result();
      expect(result.status).toBe('completed');
      expect(result.calls.map((c) => [c.toolName, c.status, c.source])).toEqual([['create_ticket', 'completed', 'executed']]);
      expect((await provider.client.effects()).byKind['ticket.create']).toBe(1);
    } finally {
      await close();
    }
  });
  it('is noticed by the 10 s heartbeat timeout its tool activities get by default when SIGKILLed mid-call, not the 60 s start-to-close timeout', async () => {
    const { env, config } = fleet('fleet-kill-default-heartbeat', 'killed.db');
    const doomed = await spawnWorker({ env, identity: 'worker-killed', crashAt: { point: 'after-effect', toolName: 'create_ticket' } });
    workers.push(doomed);
    const { client, close } = await connectClient(config);
    try {
      const scripted = scriptedRunInput(config, ticketTranscript());
      // A run started with activity options that set no heartbeat timeout, as a user's own client may.
      const { heartbeatTimeoutMs: _unset, ...activityOptions } = scripted.activityOptions!;
      const before = (await provider.client.effects()).byKind['ticket.create'] ?? 0;
      const handle = await startAgentRun(client, config, { ...scripted, activityOptions }, `fleet-kill-${Date.now()}`);
      expect(await doomed.exited).toBe('SIGKILL');
      workers.push(await spawnWorker({ env, identity: 'worker-after-kill' }));
      const result = await handle.result();
      expect(result.calls.map((c) => [c.toolName, c.status])).toEqual([['create_ticket', 'completed']]);
      expect((await provider.client.effects()).byKind['ticket.create']).toBe(before + 1);
      const events = (await handle.fetchHistory()).events ?? [];
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'create_ticket');
      expect(Number(scheduled?.activityTaskScheduledEventAttributes?.heartbeatTimeout?.seconds)).toBe(DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS / 1000);
      const started = events.find((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(scheduled?.eventId))?.activityTaskStartedEventAttributes;
      // The attempt that completed the call started because the killed one missed its heartbeats.
      expect(started?.attempt).toBeGreaterThan(1);
      expect(started?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
    } finally {
      await close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 100));
  }
}
