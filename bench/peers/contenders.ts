/**
 * The contenders of bench:peers (`../peers-bench.ts`): one unit of work is a fresh call of a tool
 * whose effect returns at once, then one re-delivery of that same call (the retry that finds the
 * result recorded). Each contender keeps its own database connections, sized for 16 clients.
 *  - the fence: `runFencedTool` in an activity context (`MockActivityEnvironment`), attempt 1 for
 *    the fresh call, attempt 2 for the re-delivery, on a PostgreSQL or SQLite checkpoint store;
 *  - DBOS Transact: a workflow with one step, started under a new workflow id, then started again
 *    under the same id (DBOS returns the recorded result);
 *  - AWS Powertools idempotency: `makeIdempotent` over its cache persistence layer on Redis, called
 *    with a new payload, then with the same payload;
 *  - the raw floor of each database: two single-row writes (insert, then update) with the driver
 *    alone for the fresh call, one read for the re-delivery.
 */
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { createClient } from '@redis/client';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { CONNECTIONS, effect, type Contender } from './raw-floors';

export { floorWithProtocol, postgresFloor, sqliteFloor, storeWithProtocol, type Contender, type DatabaseName } from './raw-floors';

/** The fence on `storeUrl`, through `runFencedTool` in an activity context. */
export async function fenceContender(database: 'PostgreSQL' | 'SQLite', storeUrl: string): Promise<Contender & { store: CheckpointStore }> {
  const store = await openCheckpointStore(storeUrl, database === 'PostgreSQL' ? { poolSize: CONNECTIONS } : {});
  const tool = defineTool({
    name: 'create_ticket',
    revision: '1',
    input: z.object({ ref: z.string() }),
    async execute(input) {
      return { output: effect(input.ref) };
    },
  });
  const activities = createToolActivities({ store, tools: [tool] });
  const info = (attempt: number) =>
    ({ attempt, activityType: 'runFencedTool', workflowExecution: { workflowId: 'peers', runId: 'peers-run' }, heartbeatTimeoutMs: 30_000 }) as never;
  const first = new MockActivityEnvironment(info(1));
  const retry = new MockActivityEnvironment(info(2));
  const input = (id: string): FencedToolInput => ({ tenant: 'peers', callId: id, toolName: 'create_ticket', input: { ref: id } });
  return {
    name: `fence (${database})`,
    database,
    floor: false,
    store,
    async fresh() {
      const id = randomUUID();
      const result = (await first.run(activities.runFencedTool, input(id))) as FencedToolResult;
      if (result.source !== 'executed') throw new Error(`fence: a fresh call answered ${result.source}`);
      return id;
    },
    async redeliver(id) {
      const result = (await retry.run(activities.runFencedTool, input(id))) as FencedToolResult;
      if (result.source !== 'store') throw new Error(`fence: a re-delivery answered ${result.source}`);
    },
    close: () => store.close(),
  };
}

/** DBOS Transact on the system database `systemDatabaseUrl`: a workflow with one step. */
export async function dbosContender(systemDatabaseUrl: string): Promise<Contender> {
  const executed = new Map<string, number>();
  const ticketWorkflow = DBOS.registerWorkflow(
    async (ref: string) => {
      const ticket = await DBOS.runStep(async () => {
        executed.set(ref, (executed.get(ref) ?? 0) + 1);
        return effect(ref);
      });
      return ticket;
    },
    { name: 'ticketWorkflow' },
  );
  DBOS.setConfig({ name: 'peers-bench', systemDatabaseUrl, systemDatabasePoolSize: CONNECTIONS, logLevel: 'error' });
  await DBOS.launch();
  const start = async (id: string) => (await DBOS.startWorkflow(ticketWorkflow, { workflowID: id })(id)).getResult();
  return {
    name: 'DBOS Transact (PostgreSQL)',
    database: 'PostgreSQL',
    floor: false,
    async fresh() {
      const id = randomUUID();
      if ((await start(id)).ticket !== `T-${id}` || executed.get(id) !== 1) throw new Error('DBOS: the fresh workflow did not run its step once');
      return id;
    },
    async redeliver(id) {
      if ((await start(id)).ticket !== `T-${id}` || executed.get(id) !== 1) throw new Error('DBOS: the re-delivery ran the step again');
      executed.delete(id);
    },
    close: () => DBOS.shutdown(),
  };
}

/** A connected Redis client of the bench. */
export type RedisClient = ReturnType<typeof createClient>;

/** AWS Powertools idempotency over its cache persistence layer on the Redis server at `url`. */
export async function powertoolsContender(url: string): Promise<Contender & { client: RedisClient }> {
  const client: RedisClient = createClient({ url });
  await client.connect();
  const executed = new Map<string, number>();
  const persistenceStore = new CachePersistenceLayer({ client: client as never });
  const config = new IdempotencyConfig({ expiresAfterSeconds: 3_600 });
  // As in a Lambda function: the invocation's remaining time bounds how long an in-progress record holds.
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 60_000 } as never);
  const createTicket = makeIdempotent(
    async (payload: { ref: string }) => {
      executed.set(payload.ref, (executed.get(payload.ref) ?? 0) + 1);
      return effect(payload.ref);
    },
    { persistenceStore, config },
  );
  return {
    name: 'Powertools idempotency (Redis)',
    database: 'Redis',
    floor: false,
    client,
    async fresh() {
      const id = randomUUID();
      if ((await createTicket({ ref: id })).ticket !== `T-${id}` || executed.get(id) !== 1) throw new Error('Powertools: the fresh call did not run once');
      return id;
    },
    async redeliver(id) {
      if ((await createTicket({ ref: id })).ticket !== `T-${id}` || executed.get(id) !== 1) throw new Error('Powertools: the re-delivery ran again');
      executed.delete(id);
    },
    async close() {
      await client.quit();
    },
  };
}

/** Redis's floor at `url`: SET then SET (appendfsync always: each one fsync'd), one GET to re-deliver. */
export async function redisFloor(url: string): Promise<Contender> {
  const client = createClient({ url });
  await client.connect();
  return {
    name: 'raw floor (Redis)',
    database: 'Redis',
    floor: true,
    async fresh() {
      const id = randomUUID();
      await client.set(`floor:${id}`, 'claimed');
      await client.set(`floor:${id}`, JSON.stringify(effect(id)));
      return id;
    },
    async redeliver(id) {
      if ((await client.get(`floor:${id}`)) === null) throw new Error('floor: no key');
    },
    async close() {
      await client.quit();
    },
  };
}
