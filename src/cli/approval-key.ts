/**
 * `approval-key <keyId>`: new key entries for signed approval grants (docs/protocol.md#approval-grants):
 * an approver's Ed25519 key pair, or with `--hmac` one secret for the deployment. Prints the entry the
 * approve path keeps (`TTC_APPROVAL_SIGNING_KEY`) and the one workers hold (`TTC_APPROVAL_GRANT_KEYS`).
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { assertGrantKeyId, newEd25519GrantKeyEntries } from '../approval-grant-keys';
import { printLine } from './terminal-safe';

/** Adds `approval-key` to the command line. */
export function registerApprovalKey(program: Command): void {
  program
    .command('approval-key <keyId>')
    .description('print new key entries for signed approvals: the approver keeps TTC_APPROVAL_SIGNING_KEY, workers hold TTC_APPROVAL_GRANT_KEYS')
    .option('--hmac', 'one HMAC secret for the deployment (the same entry on both sides) instead of an Ed25519 key pair per approver')
    .action((keyId: string, opts: { hmac?: boolean }) => {
      let entries: { signing: string; verification: string };
      if (opts.hmac === true) {
        assertGrantKeyId(keyId);
        const entry = `${keyId}:hmac:hex:${randomBytes(32).toString('hex')}`;
        entries = { signing: entry, verification: entry };
      } else {
        entries = newEd25519GrantKeyEntries(keyId);
      }
      printLine(`TTC_APPROVAL_SIGNING_KEY=${entries.signing}`);
      printLine(`TTC_APPROVAL_GRANT_KEYS=${entries.verification}`);
    });
}
