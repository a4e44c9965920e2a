// worker.ts: run it with `node worker.js` (compiled) or `npx tsx worker.ts`; stop it with Ctrl-C.
import { dirname, extname, join } from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openCheckpointStore } from 'temporal-tool-checkpoint';
import { ToolCheckpointPlugin } from 'temporal-tool-checkpoint/plugin';
import * as activities from './activities.js';

async function main(): Promise<void> {
  const script = process.argv[1] ?? 'worker.js';
  // 1. A store: SQLite on one host, PostgreSQL for a fleet.
  const store = await openCheckpointStore(process.env.TTC_STORE_URL ?? 'sqlite:.data/checkpoints.db');

  // 2. Name the activities to fence (with a revision, and a lookup when the provider can find an effect by key).
  const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1', lookup: activities.findCharge } } });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  try {
    const worker = await Worker.create({
      connection,
      taskQueue: 'payments',
      // workflows.js next to worker.js (workflows.ts next to worker.ts under tsx): process.argv[1] is the script
      // node runs, under CommonJS and ESM alike. Or a prebuilt bundle made with the plugin, see below.
      workflowsPath: join(dirname(script), `workflows${extname(script)}`),
      activities, // your activities, unchanged
      plugins: [plugin], // with OpenTelemetry: [new OpenTelemetryPlugin(...), plugin]
    });
    await worker.run(); // until SIGINT or SIGTERM
  } finally {
    await connection.close();
    await store.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
