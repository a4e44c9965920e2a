// Smoke test: both offline-provisioned Temporal binaries work with the 1.24 SDK.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Duration } from '@temporalio/common';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import * as activities from '../fixtures/smoke-activities';
import { sleepThenGreet } from '../fixtures/smoke-workflows';
import { createLocalEnv, createTimeSkippingEnv, installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime();

const DAY_MS = 24 * 60 * 60 * 1000;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../fixtures/smoke-workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
});

async function runSmoke(env: TestWorkflowEnvironment, taskQueue: string, duration: Duration) {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle,
    activities,
  });
  return worker.runUntil(
    env.client.workflow.execute(sleepThenGreet, {
      taskQueue,
      workflowId: `smoke-${taskQueue}-${Date.now()}`,
      args: ['temporal', duration],
    }),
  );
}

describe('time-skipping test server (temporal-test-server)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('skips a one-day workflow sleep in wall time', async () => {
    const t0 = Date.now();
    const result = await runSmoke(env, 'smoke-ts', '1 day');
    expect(result.greeting).toBe('hello, temporal');
    expect(result.sleptMs).toBeGreaterThanOrEqual(DAY_MS);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });
});

describe('dev server (temporal server start-dev)', () => {
  it('runs a workflow and an activity', async () => {
    const env = await createLocalEnv();
    try {
      expect(env.devServer.address).toMatch(/^127\.0\.0\.1:\d+$/);
      const result = await runSmoke(env, 'smoke-dev', '10 ms');
      expect(result.greeting).toBe('hello, temporal');
    } finally {
      await env.teardown();
    }
    expect(env.devServer.process.exitCode !== null || env.devServer.process.signalCode !== null).toBe(true);
  });

  it('keeps state in its database file across SIGKILL and restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ttc-devserver-'));
    const dbFile = path.join(dir, 'temporal.db');
    let server: DevServer | undefined;
    try {
      server = await startDevServer({ dbFile });
      const port = server.port;
      const workflowId = `persist-${Date.now()}`;
      let connection = await Connection.connect({ address: server.address });
      await new Client({ connection }).workflow.start(sleepThenGreet, {
        taskQueue: 'smoke-persist',
        workflowId,
        args: ['again', '10 ms'],
      });
      await connection.close();

      const exit = await server.stop({ signal: 'SIGKILL' });
      expect(exit.signal).toBe('SIGKILL');

      server = await startDevServer({ dbFile, port });
      connection = await Connection.connect({ address: server.address });
      try {
        const client = new Client({ connection });
        const native = await NativeConnection.connect({ address: server.address });
        try {
          const worker = await Worker.create({ connection: native, taskQueue: 'smoke-persist', workflowBundle, activities });
          const result = await worker.runUntil(client.workflow.getHandle(workflowId).result());
          expect(result).toEqual(expect.objectContaining({ greeting: 'hello, again' }));
        } finally {
          await native.close();
        }
      } finally {
        await connection.close();
      }
    } finally {
      await server?.stop({ signal: 'SIGKILL' }); // the database is deleted next
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
