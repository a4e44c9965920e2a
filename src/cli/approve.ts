/**
 * `approve` and `reject`: a person's decision on a call awaiting approval (issue 13). Being built.
 */
import type { Command } from 'commander';

export function registerApprove(_program: Command): void {}
