/**
 * `ttc worker` against a PostgreSQL store that is down when the worker starts (a database
 * restart, a fleet started before its database): the worker waits for the store with backoff,
 * logging each try, and serves once the database is up; a configuration error still ends the
 * worker at once with its message. Real processes: a real PostgreSQL server stopped and started
 * again, a real Temporal dev server, real worker processes.
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
import { startPostgres, type PostgresServer } from '../helpers/postgres';

jest.setTimeout(240_000);

describe('ttc worker with a PostgreSQL store that is not up yet', () => {
  let dir: string;
  let server: DevServer;
  let provider: RunningProvider;
  let postgres: PostgresServer;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-store-startup-'));
    server = await startDevServer();
    provider = await startProvider({ dbFile: join(dir, 'provider.db'), stderr: 'ignore' });
    postgres = await startPostgres();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await postgres?.stop();
    await provider?.stop();
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the store while the database is stopped, logging each try, then comes up and completes a run', async () => {
    const env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'store-startup',
      TTC_STORE_URL: postgres.url,
      TTC_STORE_STARTUP_WAIT: '3m',
      TTC_PROVIDER_URL: provider.url,
      TTC_SHUTDOWN_GRACE_TIME: '40s',
    };
    await postgres.halt();
    const lines: string[] = [];
    let sawWait: () => void = () => undefined;
    const waiting = new Promise<void>((done) => {
      sawWait = done;
    });
    const starting = spawnWorker({
      env,
      identity: 'worker-store-startup',
      readyTimeoutMs: 200_000,
      onLine: (line) => {
        lines.push(line);
        if (line.includes('is not available yet')) sawWait();
      },
    });
    starting.catch(() => undefined);
    // The database comes back only once the worker has found it down and said it waits.
    await Promise.race([waiting, starting.then(() => Promise.reject(new Error('the worker came up without waiting')))]);
    await postgres.resume();
    const worker = await starting;
    workers.push(worker);

    const waits = lines.filter((line) => line.includes('is not available yet'));
    expect(waits.length).toBeGreaterThanOrEqual(1);
    // Each try names the store (password masked), the try, the bound and the driver's reason.
    expect(waits[0]).toMatch(
      /store postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres is not available yet \(try 1, \d+ of at most 180000 ms waited\): STORE_UNAVAILABLE: .*(ECONNREFUSED|connect)/,
    );
    expect(waits[0]).toContain('trying again in');

    const config = resolveConfig({}, { ...process.env, ...env });
    const { client, close } = await connectClient(config);
    try {
      const transcript = JSON.parse(readFileSync(join(__dirname, '../../examples/transcripts/anthropic-ticket.json'), 'utf8')) as unknown;
      const handle = await startAgentRun(client, config, scriptedRunInput(config, transcript), `store-startup-${process.pid}`);
      const result = await handle.result();
      expect(result.status).toBe('completed');
      expect(result.calls.map((c) => [c.toolName, c.status, c.source])).toEqual([['create_ticket', 'completed', 'executed']]);
      expect((await provider.client.effects()).byKind['ticket.create']).toBe(1);
      const store = await openCheckpointStore(postgres.url);
      try {
        expect((await store.listByStatus(['delivered'])).map((r) => r.binding.toolName)).toEqual(['create_ticket']);
      } finally {
        await store.close();
      }
    } finally {
      await close();
    }
  });

  it('exits at once with its message on a configuration error (a database that does not exist), without waiting', async () => {
    await postgres.resume();
    const lines: string[] = [];
    const starting = spawnWorker({
      env: {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: 'store-startup-misconfigured',
        TTC_STORE_URL: `postgres://postgres@127.0.0.1:${postgres.port}/no_such_database`,
        TTC_STORE_STARTUP_WAIT: '10m',
        TTC_PROVIDER_URL: provider.url,
        TTC_SHUTDOWN_GRACE_TIME: '40s',
      },
      identity: 'worker-store-misconfigured',
      readyTimeoutMs: 200_000,
      onLine: (line) => lines.push(line),
    });
    await expect(starting).rejects.toThrow(/exited \(1\) before it was ready/);
    const output = lines.join('\n');
    expect(output).toMatch(/STORE_UNAVAILABLE: .*3D000 database "no_such_database" does not exist/);
    expect(output).not.toContain('is not available yet');
  });
});
