/**
 * `codec-server`: serves the payload codec (TTC_PAYLOAD_CODEC_KEY…) over Temporal's codec server
 * protocol, so the Temporal UI and `temporal … --codec-endpoint` show decrypted payloads (see
 * src/codec/codec-server.ts). Binds 127.0.0.1; refuses to start without a codec key.
 */
import type { Command } from 'commander';
import { CheckpointError } from '../checkpoint/errors';
import { requireCodecFromEnv } from '../codec/codec-config';
import { DEFAULT_CODEC_SERVER_PORT, parseCorsOrigin, startCodecServer } from '../codec/codec-server';
import { loadConfig } from '../config';
import { stopOnSignals } from './stop-signals';
import { printError, printLine } from './terminal-safe';

export function registerCodecServer(program: Command): void {
  program
    .command('codec-server')
    .description('serve the payload codec (TTC_PAYLOAD_CODEC_KEY) for the Temporal UI and `temporal --codec-endpoint`, on 127.0.0.1')
    .option('--port <n>', `TCP port (default ${DEFAULT_CODEC_SERVER_PORT})`, port)
    .option('--cors-origin <url>', 'browser origin allowed to call it, e.g. the Temporal UI http://localhost:8233 (repeatable)', (value: string, all: string[] = []) => [
      ...all,
      parseCorsOrigin(value),
    ])
    .action(async (opts: { port?: number; corsOrigin?: string[] }) => {
      const codec = requireCodecFromEnv(process.env);
      const config = loadConfig();
      const server = await startCodecServer({
        codec,
        port: opts.port ?? DEFAULT_CODEC_SERVER_PORT,
        corsOrigins: opts.corsOrigin ?? [],
        namespace: config.temporal.namespace,
        onError: (error) => printError(`codec-server: unexpected error: ${error instanceof Error ? error.message : String(error)}`),
      });
      stopOnSignals('codec-server', () => server.close());
      printLine(
        `codec server on ${server.url} (namespace ${config.temporal.namespace}; key ids ${codec.keyIds.join(', ')}; CORS origins: ${(opts.corsOrigin ?? []).join(', ') || 'none'})`,
      );
      printLine(`use: temporal workflow show --codec-endpoint ${server.url} …, or the Temporal UI's codec server setting`);
    });
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > 65_535) {
    throw new CheckpointError('INVALID_ARGUMENT', `--port must be an integer from 1 to 65535, got ${JSON.stringify(value)}`, { field: '--port' });
  }
  return n;
}
