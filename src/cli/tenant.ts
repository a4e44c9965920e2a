/**
 * Tenants on the command line: `show`, `pending` and `resolve` show each
 * row's tenant and take `--tenant` to act on one tenant only. A filter for operators, not access
 * control: anyone with access to the Temporal namespace and the store can read every tenant.
 */
import { CheckpointError } from '../checkpoint/errors';

/** The tenant of a binding namespace `<Temporal namespace>/<tenant>` (see `callAddress`), or `?`. */
export function tenantOfNamespace(namespace: string): string {
  const slash = namespace.indexOf('/');
  return slash < 0 ? '?' : namespace.slice(slash + 1);
}

/**
 * @param runTenant the tenant the run reports (absent for runs started before runs reported their tenant).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `--tenant`) when `wanted` is given and
 *   the run belongs to another tenant, or does not report one.
 */
export function assertRunTenant(workflowId: string, runTenant: string | undefined, wanted: string | undefined): void {
  if (wanted === undefined || runTenant === wanted) return;
  throw new CheckpointError(
    'INVALID_ARGUMENT',
    `run ${workflowId} is ${runTenant === undefined ? 'of an unknown tenant (started before runs reported one)' : `tenant ${JSON.stringify(runTenant)}'s`}, not ${JSON.stringify(wanted)}'s; nothing was done`,
    { field: '--tenant' },
  );
}
