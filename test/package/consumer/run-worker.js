// A user's worker in a fresh project, by the package name only: opens the checkpoint store at
// STORE_URL, runs a worker with the fenced tool activities on TEMPORAL_ADDRESS, executes
// consumerWorkflow and prints {"result", "effects"} as JSON on its last stdout line.
const { Client, Connection } = require('@temporalio/client');
const { NativeConnection, Worker } = require('@temporalio/worker');
const { createToolActivities, defineTool, openCheckpointStore } = require('temporal-tool-checkpoint');
const { z } = require('zod');

async function main() {
  const address = process.env.TEMPORAL_ADDRESS;
  const store = await openCheckpointStore(process.env.STORE_URL);
  let effects = 0;
  const sendEmail = defineTool({
    name: 'send_email',
    revision: 'v1',
    input: z.object({ to: z.string() }),
    async execute(input) {
      effects += 1;
      return { output: { messageId: `m-${effects}`, to: input.to } };
    },
  });
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  try {
    const taskQueue = `consumer-${process.pid}`;
    const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('./workflows'), activities: createToolActivities({ store, tools: [sendEmail] }) });
    const client = new Client({ connection: clientConnection });
    const result = await worker.runUntil(client.workflow.execute('consumerWorkflow', { taskQueue, workflowId: `consumer-${process.pid}-${Date.now()}`, args: [] }));
    process.stdout.write(`${JSON.stringify({ result, effects })}\n`);
  } finally {
    await clientConnection.close();
    await connection.close();
    await store.close();
  }
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
