// A user's worker in a fresh project, by the package name only: the plain activity sendEmail
// (it appends a line to the LEDGER file, keyed by the fenced call's idempotency key) fenced by
// ToolCheckpointPlugin with a lookup in that ledger; the store at STORE_URL.
//   node run-worker.js start   starts emailWorkflow(WORKFLOW_ID), prints {"result"} when it ends
//   node run-worker.js finish  runs the worker until the started workflow ends, prints {"result"}
// With TTC_CRASH_AT=after-effect:sendEmail the process SIGKILLs itself right after the effect.
const { appendFileSync, existsSync, readFileSync } = require('node:fs');
const { Client, Connection } = require('@temporalio/client');
const { NativeConnection, Worker } = require('@temporalio/worker');
const { openCheckpointStore } = require('temporal-tool-checkpoint');
const { ToolCheckpointPlugin, fencedCallContext } = require('temporal-tool-checkpoint/plugin');

const { TEMPORAL_ADDRESS: address, STORE_URL, LEDGER, WORKFLOW_ID, TASK_QUEUE } = process.env;
const ledger = () =>
  existsSync(LEDGER)
    ? readFileSync(LEDGER, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

const activities = {
  async sendEmail(to) {
    const idempotencyKey = fencedCallContext()?.idempotencyKey ?? null;
    const messageId = `msg-${ledger().length + 1}`;
    appendFileSync(LEDGER, `${JSON.stringify({ to, messageId, idempotencyKey, pid: process.pid })}\n`);
    return { messageId };
  },
};

async function lookup(ctx) {
  const sent = ledger().find((e) => e.idempotencyKey === ctx.idempotencyKey);
  return sent === undefined ? { found: false } : { found: true, output: { messageId: sent.messageId } };
}

async function main() {
  const store = await openCheckpointStore(STORE_URL);
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  try {
    const plugin = new ToolCheckpointPlugin({ store, reconcileMarginMs: 0, fence: { sendEmail: { revision: 'v1', callDeadlineMs: 2_000, lookup } } });
    const worker = await Worker.create({ connection, taskQueue: TASK_QUEUE, workflowsPath: require.resolve('./workflows'), activities, plugins: [plugin] });
    const client = new Client({ connection: clientConnection });
    const handle =
      process.argv[2] === 'start'
        ? await client.workflow.start('emailWorkflow', { taskQueue: TASK_QUEUE, workflowId: WORKFLOW_ID, args: ['a@example.com'] })
        : client.workflow.getHandle(WORKFLOW_ID);
    const result = await worker.runUntil(handle.result());
    process.stdout.write(`${JSON.stringify({ result })}\n`);
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
