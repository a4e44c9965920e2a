/**
 * A private Redis server for bench:peers: Debian's `redis-server` (scripts/ensure-redis.sh) on a
 * free loopback port, with the append-only file fsync'd on every write (`appendfsync always`) and
 * no snapshots, in a temporary directory removed on stop.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@redis/client';
import { freePort } from '../../test/helpers/free-port';

export interface RedisServer {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts the server and waits until it answers PING (at most 30 s). */
export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--daemonize', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  for (let tries = 0; ; tries += 1) {
    const client = createClient({ url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      break;
    } catch (error) {
      await client.disconnect().catch(() => undefined);
      if (tries >= 300) throw new Error(`redis-server did not answer on ${url}: ${String(error)}`);
      await sleep(100);
    }
  }
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
