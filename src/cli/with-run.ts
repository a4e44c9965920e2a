/**
 * The start shared by the CLI commands that act on one agent run: connect, read the run's status
 * (`runStatus` query), check `--tenant`, act, close the connection.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { readRunStatus } from '../operator/run-decisions';
import type { RunStatusView } from '../workflows/agent/types';
import { explainUndecodable } from './errors';
import { assertRunTenant } from './tenant';

/**
 * Runs `act` with the run's handle and status.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for an unknown run or another tenant's run,
 *   DECRYPTION_FAILED (with the hint) when the run's payloads are encrypted and no key is set;
 *   whatever `act` throws.
 */
export async function withRun(workflowId: string, tenant: string | undefined, act: (handle: WorkflowHandle, status: RunStatusView) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const { client, close } = await connectClient(config);
  try {
    const handle = client.workflow.getHandle(workflowId);
    const status = await readRunStatus(handle, config.temporal.namespace).catch((error: unknown) => {
      throw explainUndecodable(error, `run ${workflowId}'s status`);
    });
    assertRunTenant(workflowId, status.tenant, tenant);
    await act(handle, status);
  } finally {
    await close();
  }
}
