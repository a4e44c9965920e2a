/**
 * Real PostgreSQL servers for tests and the store benchmark, from Debian's server binaries
 * (`/usr/lib/postgresql/<version>/bin`; `scripts/ensure-postgres.sh` installs them, PG_BIN
 * overrides). No mocks: `initdb` into a temp dir, `pg_ctl start` on a free loopback port, the
 * unix socket in the temp dir. As root, the binaries run as the `postgres` OS user
 * (`runuser -u postgres --`), which owns the temp dir.
 *
 *   const server = await startPostgres();        // { url, port, stop(), halt(), resume() }
 *   const db = await createTestDatabase(server.url);   // { url, drop() }: a fresh database
 *   ...
 *   await db.drop(); await server.stop();
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { CheckpointStore, CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { RawRow, StoreTarget } from '../conformance/store-conformance';
import { freePort } from './free-port';

const run = promisify(execFile);

/** A private PostgreSQL server. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth on loopback). */
  readonly url: string;
  readonly port: number;
  /** The temp dir holding the data dir, the socket and the log. */
  readonly dir: string;
  /** Stops the server (fast shutdown) and deletes its files. Idempotent. */
  stop(): Promise<void>;
  /** Stops the server but keeps its data, so {@link resume} can start it again. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and waits until it accepts queries. */
  resume(): Promise<void>;
}

/** Options of {@link startPostgres}. */
export interface StartPostgresOptions {
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string | number>>;
}

/** The directory with initdb, pg_ctl and postgres: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) {
    throw new Error(
      'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: run scripts/ensure-postgres.sh (apt-get install postgresql), set PG_BIN, or set DATABASE_URL',
    );
  }
  return join(root, versions[0], 'bin');
}

/**
 * Starts a fresh PostgreSQL server on a free loopback port and waits until it answers.
 * Default settings: fsync on (real durability), max_connections 300.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'ttc-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const pgUser = asRoot ? await postgresUid() : null;
  if (pgUser !== null) chownSync(dir, pgUser.uid, pgUser.gid);
  const exec = async (tool: string, args: string[]): Promise<string> => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    try {
      const { stdout } = await run(file, argv, { cwd: dir, timeout: 120_000 });
      return stdout;
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      throw new Error(`${tool} ${args.join(' ')} failed: ${e.stderr ?? ''} ${e.message}`);
    }
  };
  await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    port,
    unix_socket_directories: dir,
    max_connections: 300,
    ...options.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${String(v)}`)
    .join(' ');
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const start = async (): Promise<void> => {
    await exec('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '60', '-o', serverOptions]);
    await waitForQueries(url);
  };
  let running = false;
  let removed = false;
  const halt = async (): Promise<void> => {
    if (!running) return;
    await exec('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w', '-t', '60']);
    running = false;
  };
  await start();
  running = true;
  return {
    url,
    port,
    dir,
    halt,
    async resume() {
      if (running || removed) return;
      await start();
      running = true;
    },
    async stop() {
      if (removed) return;
      await halt();
      removed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh, randomly named database on the server of `baseUrl`; `drop()` removes it. */
export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/**
 * Creates a database `ttc_test_<random>` (so test files and suites never share tables) and
 * returns its URL.
 */
export async function createTestDatabase(baseUrl: string = requireDatabaseUrl()): Promise<TestDatabase> {
  const name = `ttc_test_${randomBytes(6).toString('hex')}`;
  await withClient(baseUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(baseUrl, name);
  return {
    url,
    name,
    async drop() {
      await withClient(baseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** DATABASE_URL (set by the jest global setup, or by the caller). */
export function requireDatabaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (test/helpers/global-setup.ts starts a server) or set it');
  return url;
}

/** `url` with its database name replaced by `name`. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `fn` with a connected client, always closing it. */
export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Options of {@link freshPostgresTarget}. */
export interface FreshPostgresTargetOptions {
  /** The server to create the database on. @default DATABASE_URL */
  readonly baseUrl?: string;
  /**
   * The URL the store opens, from the database's direct URL (e.g. through a pooler:
   * `bouncer.route`). Raw row access always goes direct. @default the direct URL
   */
  readonly route?: (directUrl: string) => string;
}

/**
 * A conformance target (`../conformance/store-conformance`): a fresh database on a real server,
 * stores opened on it (directly or through `route`), and raw access to its tables over a direct
 * connection for damaging rows. `dispose` closes the stores and drops the database.
 */
export async function freshPostgresTarget(options: FreshPostgresTargetOptions = {}): Promise<StoreTarget> {
  const database = await createTestDatabase(options.baseUrl);
  const url = options.route === undefined ? database.url : options.route(database.url);
  const stores: CheckpointStore[] = [];
  let client: Client | undefined;
  const raw = async (): Promise<Client> => {
    if (client === undefined) {
      client = new Client({ connectionString: database.url });
      client.on('error', () => undefined);
      await client.connect();
    }
    return client;
  };
  return {
    url,
    async open(storeOptions: CheckpointStoreOptions = {}) {
      const store = await openCheckpointStore(url, storeOptions);
      stores.push(store);
      return store;
    },
    raw: {
      async row(key) {
        const { rows } = await (
          await raw()
        ).query<RawRow & { revision: string; updatedAt: Date }>('SELECT key, status, revision, updated_at AS "updatedAt", body FROM ttc_checkpoints WHERE key = $1', [key]);
        const row = rows[0];
        return row === undefined ? null : { ...row, revision: Number(row.revision), updatedAt: row.updatedAt.toISOString() };
      },
      async update(key, columns) {
        const names = Object.keys(columns);
        await (await raw()).query(`UPDATE ttc_checkpoints SET ${names.map((c, i) => `${c} = $${i + 2}`).join(', ')} WHERE key = $1`, [key, ...Object.values(columns)]);
      },
      async count() {
        return Number((await (await raw()).query<{ n: string }>('SELECT count(*) AS n FROM ttc_checkpoints')).rows[0]!.n);
      },
      async integrity() {
        const c = await raw();
        await c.query('CREATE EXTENSION IF NOT EXISTS amcheck');
        await c.query("SELECT bt_index_check(index => i.indexrelid, heapallindexed => true) FROM pg_index i WHERE i.indrelid = 'ttc_checkpoints'::regclass");
        return 'ok';
      },
      async entryBody(logId, key) {
        const { rows } = await (await raw()).query<{ body: string }>('SELECT body FROM ttc_conversation_entries WHERE log_id = $1 AND entry_key = $2', [logId, key]);
        return rows[0]?.body ?? null;
      },
      async updateEntry(logId, key, columns) {
        const sets = Object.entries({ body: columns.body, created_at: columns.createdAt }).filter(([, v]) => v !== undefined);
        await (
          await raw()
        ).query(`UPDATE ttc_conversation_entries SET ${sets.map(([c], i) => `${c} = $${i + 3}`).join(', ')} WHERE log_id = $1 AND entry_key = $2`, [
          logId,
          key,
          ...sets.map(([, v]) => v),
        ]);
      },
      async entryCount() {
        return Number((await (await raw()).query<{ n: string }>('SELECT count(*) AS n FROM ttc_conversation_entries')).rows[0]!.n);
      },
    },
    async dispose() {
      for (const store of stores) await store.close();
      await client?.end().catch(() => undefined);
      await database.drop();
    },
  };
}

async function waitForQueries(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await withClient(url, (c) => c.query('SELECT 1'));
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function postgresUid(): Promise<{ uid: number; gid: number }> {
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}
