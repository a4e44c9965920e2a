#!/usr/bin/env node
/**
 * The `ttc` command line (README.md#command-line). Every value comes from temporal.config.ts
 * and the environment (see src/config.ts). Errors print their code and message, with the messages
 * of their causes (a failed run's `NOT_PINNED: …`; see `errors.ts`), escaped, and exit 1.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { findProjectRoot } from '../dev/temporal-binaries';
import { registerApprovalKey } from './approval-key';
import { registerApprove } from './approve';
import { registerCancel } from './cancel';
import { registerCodecServer } from './codec-server';
import { registerConsole } from './console';
import { registerDemo } from './demo';
import { registerDev } from './dev';
import { registerPending } from './pending';
import { registerPrune } from './prune';
import { registerResolve } from './resolve';
import { registerResolveInStore } from './resolve-in-store';
import { registerShow } from './show';
import { registerStart } from './start';
import { registerWorker } from './worker';
import { describeError } from './errors';
import { printError } from './terminal-safe';

/** This package's version, from its package.json (the installed package's, or this checkout's); 'unknown' when unreadable. */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(findProjectRoot(__dirname), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
const version = packageVersion();
const program = new Command('ttc').description('temporal-tool-checkpoint: fenced, checkpointed AI-agent tool calls on Temporal').version(version);
for (const register of [
  registerDemo,
  registerDev,
  registerWorker,
  registerStart,
  registerShow,
  registerPending,
  registerApprove,
  registerApprovalKey,
  registerCancel,
  registerResolve,
  registerResolveInStore,
  registerPrune,
  registerCodecServer,
  registerConsole,
])
  register(program);

// `ttc pending | head`: a reader that closes the pipe early ends the command quietly, not with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

program.parseAsync(process.argv).catch((error: unknown) => {
  printError(describeError(error));
  process.exit(1);
});
