/**
 * `console [--port p] [--host h]`: the approval console in the browser (see
 * src/console and docs/console.md). Connects to Temporal with the configuration, listens on
 * 127.0.0.1 unless `--host` says otherwise (with a warning when that is not loopback), and prints
 * a one-time login link (never the token in a URL) and the console token for the login form and
 * `Authorization: Bearer` (a random one, unless TTC_CONSOLE_TOKEN is set: that one is never
 * printed). SIGINT / SIGTERM stop it.
 */
import { assertPeersInstalled } from '../optional-peer';
import type { Command } from 'commander';
import { CheckpointError } from '../checkpoint/errors';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT } from '../console/defaults';
import { CONSOLE_TOKEN_ENV, resolveConsoleToken } from '../console/token';
import { DEFAULT_STATUS_QUERY_TIMEOUT_MS } from '../operator/waiting-runs';
import { defaultResolvedBy } from '../plugin/resolve-in-store';
import { describeError } from './errors';
import { durationMs } from './options';
import { stopOnSignals } from './stop-signals';
import { printError, printLine } from './terminal-safe';

export function registerConsole(program: Command): void {
  program
    .command('console')
    .description(`serve the approval console: runs waiting for a person, approve / reject / resolve in the browser (on ${DEFAULT_CONSOLE_HOST}, token required)`)
    .option('--port <n>', `TCP port, 0 for any free one (default ${DEFAULT_CONSOLE_PORT})`, port)
    .option('--host <host>', `interface to listen on (default ${DEFAULT_CONSOLE_HOST}; anything else is reachable from the network)`)
    .option(
      '--query-timeout <duration>',
      `how long each run may take to answer its status query before the page shows it as not answering (default ${DEFAULT_STATUS_QUERY_TIMEOUT_MS / 1_000}s)`,
      (value: string) => durationMs(value, '--query-timeout'),
    )
    .option('--operator <name>', 'who the decisions taken in this console name (kept with each decision; default: TTC_CONSOLE_OPERATOR, else <OS user>@<host>)')
    .option(
      '--identity-header <name>',
      'take who decides from this request header, set by a trusted proxy in front of the console (a decision without it is refused); off unless given',
    )
    .action(async (opts: { port?: number; host?: string; queryTimeout?: number; operator?: string; identityHeader?: string }) => {
      const { token, fromEnv } = resolveConsoleToken(process.env);
      const config = loadConfig();
      // Loaded here, not at the top: every other command would pay for the HTTP server (`require`:
      // see the worker command).
      assertPeersInstalled(['fastify', '@fastify/cookie@~11.0.2', '@fastify/csrf-protection', '@fastify/formbody'], '`ttc console`');
      const { temporalOperations } = require('../console/operations') as typeof import('../console/operations');
      const { startConsoleServer } = require('../console/server') as typeof import('../console/server');
      const { client, close } = await connectClient(config);
      let server;
      try {
        server = await startConsoleServer({
          operations: temporalOperations(client, opts.queryTimeout !== undefined ? { queryTimeoutMs: opts.queryTimeout } : {}, config.keys.approvalSigningKey ?? undefined),
          namespace: config.temporal.namespace,
          token,
          decider:
            opts.identityHeader !== undefined ? { identityHeader: opts.identityHeader } : { operator: opts.operator ?? process.env.TTC_CONSOLE_OPERATOR ?? defaultResolvedBy() },
          ...(opts.host !== undefined ? { host: opts.host } : {}),
          port: opts.port ?? DEFAULT_CONSOLE_PORT,
          onError: (error) => printError(`console: unexpected error: ${describeError(error)}`),
        });
      } catch (error) {
        await close();
        throw error;
      }
      const running = server;
      stopOnSignals('console', () => running.close().then(close));
      if (!server.loopbackOnly)
        printError(`console: WARNING: listening on ${opts.host} (not loopback): anyone who can reach it and has the token can approve tool calls; the page is plain HTTP`);
      printLine(`console for namespace ${config.temporal.namespace} on ${server.url}`);
      // A one-time link: the token itself never goes into a URL (a browser's history keeps URLs).
      printLine(`open ${server.loginUrl}`);
      printLine(
        fromEnv
          ? `(the link works once; then log in at ${server.loginFormUrl} with the token from ${CONSOLE_TOKEN_ENV})`
          : `(the link works once; then log in at ${server.loginFormUrl}, or send Authorization: Bearer, with the token ${token})`,
      );
    });
}

/** A TCP port 0–65535 (0: any free one). */
function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n > 65_535) {
    throw new CheckpointError('INVALID_ARGUMENT', `--port must be an integer from 0 to 65535, got ${JSON.stringify(value)}`, { field: '--port' });
  }
  return n;
}
