/**
 * What a contender of bench:peers asked of its database, read from the database's own counters:
 * PostgreSQL's `pg_stat_statements` (per database), Redis's `INFO commandstats`, and for SQLite
 * the checkpoint store's counters (`stats()`) or the floor's own count.
 */
import type { createClient } from '@redis/client';
import type { Pool } from 'pg';

/** Statements sent (transaction control included) and the ones that write. */
export interface Counts {
  readonly statements: number;
  readonly writes: number;
}

export const subtract = (a: Counts, b: Counts): Counts => ({ statements: a.statements - b.statements, writes: a.writes - b.writes });

const WRITE_SQL = /^\s*(insert|update|delete|merge)\b|^\s*with\b[\s\S]*\b(insert|update|delete)\b/i;

/** The statements run in database `datname` so far (`pg_stat_statements`, read from another database). */
export async function postgresCounts(admin: Pool, datname: string): Promise<Counts> {
  const { rows } = await admin.query<{ query: string; calls: string }>(
    'SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1',
    [datname],
  );
  let statements = 0;
  let writes = 0;
  for (const row of rows) {
    const calls = Number(row.calls);
    statements += calls;
    if (WRITE_SQL.test(row.query)) writes += calls;
  }
  return { statements, writes };
}

const REDIS_WRITES = new Set(['set', 'setnx', 'setex', 'psetex', 'getset', 'getdel', 'del', 'unlink', 'expire', 'pexpire', 'hset', 'incr', 'eval', 'evalsha']);
const REDIS_ADMIN = new Set(['info', 'hello', 'client', 'ping', 'config', 'command', 'quit']);

/** The commands the Redis server ran so far (`INFO commandstats`), the benchmark's own admin commands left out. */
export async function redisCounts(client: ReturnType<typeof createClient>): Promise<Counts> {
  const info = await client.info('commandstats');
  let statements = 0;
  let writes = 0;
  for (const match of info.matchAll(/^cmdstat_([a-z_|]+):calls=(\d+)/gm)) {
    const command = match[1]!.split('|')[0]!;
    if (REDIS_ADMIN.has(command)) continue;
    const calls = Number(match[2]);
    statements += calls;
    if (REDIS_WRITES.has(command)) writes += calls;
  }
  return { statements, writes };
}
