/**
 * `start --require-approval <tool,…> [--approval-ttl <duration>]`: the run's
 * `approvalRequired` input, so each call of those tools waits for `approve` / `reject`. The
 * workflow's input validation (`src/workflows/agent/input.ts`) stays the authority on the values;
 * this refuses early what would silently weaken the approval, a name the run does not offer.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { ApprovalPolicy } from '../workflows/agent/types';
import { durationMs, nameList } from './options';

/** How long a call waits for a decision when `--approval-ttl` is not given. */
export const DEFAULT_APPROVAL_TTL = '15m';

/**
 * The `approvalRequired` input for `--require-approval` / `--approval-ttl`: every named tool
 * with `expiresAfterMs` = the ttl (default {@link DEFAULT_APPROVAL_TTL}); undefined when
 * `--require-approval` is not given.
 *
 * @param offeredTools the tools the run offers (for a transcript: those it calls).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `--require-approval`) for an empty
 *   list or a name the run does not offer (a misspelt name would let the real tool run without
 *   approval); (field `--approval-ttl`) for a ttl that is not a positive duration, or a ttl
 *   without `--require-approval`.
 */
export function approvalRequiredOption(
  opts: { readonly requireApproval?: string; readonly approvalTtl?: string },
  offeredTools: readonly string[],
): Record<string, ApprovalPolicy> | undefined {
  if (opts.requireApproval === undefined) {
    if (opts.approvalTtl !== undefined) throw new CheckpointError('INVALID_ARGUMENT', '--approval-ttl applies only with --require-approval <tool,…>', { field: '--approval-ttl' });
    return undefined;
  }
  const names = nameList(opts.requireApproval, '--require-approval');
  const unknown = names.filter((name) => !offeredTools.includes(name));
  if (unknown.length > 0) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `--require-approval names ${unknown.map((n) => JSON.stringify(n)).join(', ')}, which the run does not offer (it offers ${offeredTools.length === 0 ? 'no tools' : offeredTools.join(', ')}); nothing was started`,
      { field: '--require-approval', actual: unknown },
    );
  }
  const expiresAfterMs = durationMs(opts.approvalTtl ?? DEFAULT_APPROVAL_TTL, '--approval-ttl');
  return Object.fromEntries(names.map((name) => [name, { expiresAfterMs }]));
}
