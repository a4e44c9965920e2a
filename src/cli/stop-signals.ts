/**
 * How a long-running command (`ttc dev`, `ttc console`, `ttc codec-server`) stops: SIGINT or
 * SIGTERM runs its close once and exits 0, or 1 after printing why the close failed. Install the
 * handlers before the command prints that it is ready: a supervisor (or a test) that signals it on
 * reading that line must find them in place, or the process dies of the signal unclosed.
 */
import { describeError } from './errors';
import { printError } from './terminal-safe';

/** Runs `close` on the first SIGINT or SIGTERM and exits; later signals while it closes are ignored. `what` prefixes the error line. */
export function stopOnSignals(what: string, close: () => Promise<unknown>): void {
  let closing = false;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    // A signal handler cannot wait: the close runs on, and a failed close still ends the process (exit 1).
    void close().then(
      () => process.exit(0),
      (error: unknown) => {
        printError(`${what}: could not close: ${describeError(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
