/**
 * A real PgBouncer in front of a test PostgreSQL server (fleets reach PostgreSQL
 * through a transaction-mode pooler). No mocks: Debian's `pgbouncer` binary
 * (`scripts/ensure-pgbouncer.sh` installs it; PGBOUNCER_BIN overrides), its own ini and userlist
 * in a temp dir, a free loopback port, `auth_type = trust`, started as a child process of the
 * test (as root it drops to the `postgres` OS user with `-u`, as PgBouncer refuses to run as
 * root). Never Debian's system service.
 *
 *   const server = await startPostgres();
 *   const bouncer = await startPgBouncer(server.url);          // pool_mode = transaction
 *   const db = await createTestDatabase(server.url);
 *   const url = bouncer.route(db.url);                           // same database, through PgBouncer
 *   ...
 *   await bouncer.stop(); await db.drop(); await server.stop();
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withClient } from './postgres';
import { freePort } from './free-port';

/** A running PgBouncer. */
export interface PgBouncer {
  /** `postgres://<server user>@127.0.0.1:<port>/postgres` through the pooler. */
  readonly url: string;
  readonly port: number;
  /** The temp dir holding the ini, the userlist and the log. */
  readonly dir: string;
  /** `url` (a direct URL of the backing server) with host and port replaced by the pooler's. */
  route(url: string): string;
  /** The pooler's log so far (for failure messages). */
  log(): string;
  /** Stops the pooler (SIGTERM: PgBouncer 1.18's fast exit) but keeps its files, so {@link resume} can start it again. */
  halt(): Promise<void>;
  /** Starts a halted pooler again on the same port and waits until it answers. */
  resume(): Promise<void>;
  /** Stops the pooler and deletes its files. Idempotent. */
  stop(): Promise<void>;
  /**
   * Waits until a query passes through the pooler to `url`'s database (after the server behind
   * it came back, PgBouncer refuses logins for `server_login_retry` seconds).
   */
  ready(url?: string): Promise<void>;
}

/** Options of {@link startPgBouncer}. */
export interface StartPgBouncerOptions {
  /** @default 'transaction' */
  readonly poolMode?: 'session' | 'transaction' | 'statement';
  /** More roles the pooler lets in (the userlist; trust auth, so no passwords), besides the server URL's user. */
  readonly users?: readonly string[];
  /** Server connections per (user, database). @default 10 */
  readonly defaultPoolSize?: number;
  /** `ignore_startup_parameters` (e.g. 'options'); unset by default, as Debian ships it. */
  readonly ignoreStartupParameters?: string;
  /** More `[pgbouncer]` settings (`query_wait_timeout`, ...), written as `key = value`. */
  readonly settings?: Readonly<Record<string, string | number>>;
}

/**
 * PgBouncers this process started and has not stopped. Should the test process end without its
 * `afterAll` (a crashed test file, jest's forceExit), they are killed with it instead of being
 * left running as orphans.
 */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(proc: ChildProcess): void {
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/** The pgbouncer binary: PGBOUNCER_BIN, else /usr/sbin/pgbouncer, else the one on PATH. */
export function pgbouncerBinary(): string {
  if (process.env.PGBOUNCER_BIN) return process.env.PGBOUNCER_BIN;
  if (existsSync('/usr/sbin/pgbouncer')) return '/usr/sbin/pgbouncer';
  try {
    return execFileSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('pgbouncer not found: run scripts/ensure-pgbouncer.sh (apt-get install pgbouncer) or set PGBOUNCER_BIN');
  }
}

/**
 * Starts PgBouncer on a free loopback port in front of the server of `serverUrl` (host, port,
 * user; its password, if any, for the server login), every database routed (`* = host=… port=…`),
 * and waits until a query passes through it. Defaults: `pool_mode = transaction`, `default_pool_size =
 * 10`, `max_client_conn = 2000`, `query_wait_timeout = 10` s (a statement waiting for a server
 * connection longer fails with the pooler's 08P01), `server_login_retry = 1` s.
 */
export async function startPgBouncer(serverUrl: string, options: StartPgBouncerOptions = {}): Promise<PgBouncer> {
  const server = new URL(serverUrl);
  const serverUser = decodeURIComponent(server.username || 'postgres');
  const binary = pgbouncerBinary();
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'ttc-pgbouncer-'));
  const port = await freePort();
  const users = [...new Set([serverUser, ...(options.users ?? [])])];
  const settings: Record<string, string | number> = {
    listen_addr: '127.0.0.1',
    listen_port: port,
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'userlist.txt'),
    pool_mode: options.poolMode ?? 'transaction',
    default_pool_size: options.defaultPoolSize ?? 10,
    max_client_conn: 2000,
    query_wait_timeout: 10,
    server_login_retry: 1,
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    ...(options.ignoreStartupParameters === undefined ? {} : { ignore_startup_parameters: options.ignoreStartupParameters }),
    ...options.settings,
  };
  const ini = [
    '[databases]',
    // Every database, as the connecting role; a password in the server URL is used for the server login.
    `* = host=${server.hostname || '127.0.0.1'} port=${server.port || '5432'}${server.password ? ` password=${decodeURIComponent(server.password)}` : ''}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([k, v]) => `${k} = ${String(v)}`),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), ini);
  writeFileSync(join(dir, 'userlist.txt'), users.map((u) => `"${u}" ""\n`).join(''));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    for (const f of ['', 'pgbouncer.ini', 'userlist.txt']) chownSync(join(dir, f), uid, gid);
  }
  const url = `postgres://${encodeURIComponent(serverUser)}@127.0.0.1:${port}/postgres`;
  const logFile = join(dir, 'pgbouncer.log');
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  let child: ChildProcess | undefined;
  let removed = false;
  const start = async (): Promise<void> => {
    const argv = [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
    const proc = spawn(binary, argv, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    track(proc);
    let stderr = '';
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    let exited: number | null | undefined;
    proc.on('exit', (code) => {
      exited = code;
    });
    child = proc;
    try {
      await answers(url, 30_000, () => exited !== undefined);
    } catch (error) {
      throw new Error(`pgbouncer ${exited === undefined ? `did not answer on port ${port}` : `exited with ${String(exited)}`}: ${(error as Error).message}\n${stderr}\n${log()}`);
    }
  };
  const halt = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(timer);
  };
  await start();
  return {
    url,
    port,
    dir,
    route(direct: string) {
      const u = new URL(direct);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log,
    halt,
    async resume() {
      if (removed || child !== undefined) return;
      await start();
    },
    async stop() {
      if (removed) return;
      await halt();
      removed = true;
      rmSync(dir, { recursive: true, force: true });
    },
    async ready(target = url) {
      await answers(target, 30_000);
    },
  };
}

/** Polls `SELECT 1` on `url` until it answers (or `gaveUp()`, or `timeoutMs` passed: the last error). */
async function answers(url: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await withClient(url, (c) => c.query('SELECT 1'));
      return;
    } catch (error) {
      if (gaveUp() || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
