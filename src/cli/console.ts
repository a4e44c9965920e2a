/**
 * `console`: the approval console in the browser (issue 13). Being built.
 */
import type { Command } from 'commander';

export function registerConsole(_program: Command): void {}
