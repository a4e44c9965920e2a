/**
 * A worker OS process for the SIGKILL test: the user's worker with the plugin fencing
 * `chargeCard`. Run with `node --require tsx/cjs plugin-worker.ts '<json options>'`; arm
 * `TTC_CRASH_AT` (e.g. `after-effect:chargeCard`) to make it SIGKILL itself at that fence point.
 * Prints `ready` once it polls.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { openCheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { chargeLookup, chargeLookupByArgs, paymentActivities } from './payment-activities';

/** What the test passes as the only argument. */
export interface PluginWorkerOptions {
  readonly address: string;
  readonly taskQueue: string;
  readonly storeUrl: string;
  readonly ledger: string;
  /** Fence `chargeCard` with a lookup by idempotency key in the ledger. */
  readonly lookup: boolean;
  /** With `lookup`: the lookup finds the charge by the activity's arguments (the customer), not by key. @default false */
  readonly lookupByArgs?: boolean;
  /** The fence entry's revision. @default 'v1' */
  readonly revision?: string;
  /** The fence entry's `lookupFindsEarlierRevisions`. @default absent */
  readonly lookupFindsEarlierRevisions?: boolean;
  /** The plugin's `onUnknownOutcome` and `unknownOutcomeRetryMs`. @default the plugin's */
  readonly onUnknownOutcome?: 'fail' | 'wait';
  readonly unknownOutcomeRetryMs?: number;
  /** The plugin's `heartbeatTimeoutMs`. @default the plugin's */
  readonly heartbeatTimeoutMs?: number | null;
  /** The plugin's `reconcileMarginMs` and the fence entry's `callDeadlineMs`; `null`: the plugin's defaults. @default 0 and 2,000 */
  readonly reconcileMarginMs?: number | null;
  readonly callDeadlineMs?: number | null;
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as PluginWorkerOptions;
  const store = await openCheckpointStore(options.storeUrl);
  const connection = await NativeConnection.connect({ address: options.address });
  const plugin = new ToolCheckpointPlugin({
    store,
    ...(options.reconcileMarginMs === null ? {} : { reconcileMarginMs: options.reconcileMarginMs ?? 0 }),
    ...(options.onUnknownOutcome === undefined ? {} : { onUnknownOutcome: options.onUnknownOutcome }),
    ...(options.unknownOutcomeRetryMs === undefined ? {} : { unknownOutcomeRetryMs: options.unknownOutcomeRetryMs }),
    ...(options.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs: options.heartbeatTimeoutMs }),
    fence: {
      chargeCard: {
        revision: options.revision ?? 'v1',
        ...(options.callDeadlineMs === null ? {} : { callDeadlineMs: options.callDeadlineMs ?? 2_000 }),
        ...(options.lookup ? { lookup: options.lookupByArgs === true ? chargeLookupByArgs(options.ledger) : chargeLookup(options.ledger) } : {}),
        ...(options.lookupFindsEarlierRevisions === undefined ? {} : { lookupFindsEarlierRevisions: options.lookupFindsEarlierRevisions }),
      },
    },
  });
  const worker = await Worker.create({
    connection,
    taskQueue: options.taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities: { chargeCard: paymentActivities(options.ledger).chargeCard },
    plugins: [plugin],
  });
  process.stdout.write('ready\n');
  try {
    await worker.run();
  } finally {
    await connection.close();
    await store.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
