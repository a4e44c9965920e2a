// client.ts: starts a checkout and prints its receipt; run it with `node client.js` or `npx tsx client.ts`.
import { Client, Connection } from '@temporalio/client';
import type { checkoutWorkflow } from './workflows.js';

async function main(): Promise<void> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  try {
    const client = new Client({ connection });
    const order = { orderId: 'order-1001', amountCents: 4_200 };
    const receipt = await client.workflow.execute<typeof checkoutWorkflow>('checkoutWorkflow', {
      taskQueue: 'payments',
      workflowId: `checkout-${order.orderId}`,
      args: [order],
    });
    console.log(JSON.stringify(receipt));
  } finally {
    await connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
