/**
 * Creating and upgrading the PostgreSQL store's tables with the versioned steps of
 * `./migrations/postgres`, in one transaction under a transaction-scoped advisory lock (so
 * concurrent openers do not race), after checking the schema and who owns what is in it.
 */
import type { PoolClient } from 'pg';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { POSTGRES_MIGRATIONS } from './migrations/postgres';
import type { PgConnection } from './pg-connection';
import { classifyPgError } from './pg-errors';
import { quoteIdent, type PgStatements } from './pg-statements';

/**
 * Key of the transaction-scoped advisory lock (`pg_advisory_xact_lock`) held while migrating (an
 * arbitrary, fixed bigint). Transaction-scoped, not a session lock: through a transaction-mode
 * pooler a session lock stays on whichever server connection took it, and the unlock runs on
 * another (the next opener then waits for ever).
 */
export const MIGRATION_LOCK_ID = '7467636b70740001';

/** The migration of the store's tables in `schema`. */
export class SchemaMigration {
  constructor(
    private readonly conn: PgConnection,
    private readonly sql: PgStatements,
    private readonly schema: string,
  ) {}

  /**
   * Creates or upgrades the tables: one transaction on one connection (through a
   * transaction-mode pooler, one server connection until COMMIT) holding the
   * transaction-scoped advisory lock {@link MIGRATION_LOCK_ID}, with the search_path set for
   * this transaction only (`SET LOCAL`: pg_catalog for the checks, the store's schema first for
   * each released step, whose SQL names tables unqualified). BEGIN, SET LOCAL and the lock go out
   * in one flight. READ COMMITTED whatever the role's default, so each statement after the lock
   * sees what a concurrent opener committed before releasing it.
   *
   * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA, INVALID_CONFIG (see `checkSchema`,
   *   `assertTrustedOwners`), STORE_UNAVAILABLE for driver errors (rolled back).
   */
  async run(): Promise<void> {
    const client = await this.conn.connect();
    let broken: Error | undefined;
    const lockId = BigInt(`0x${MIGRATION_LOCK_ID}`).toString();
    try {
      const flight = [
        client.query('BEGIN ISOLATION LEVEL READ COMMITTED'),
        client.query('SET LOCAL search_path TO pg_catalog, pg_temp'),
        client.query('SELECT pg_catalog.pg_advisory_xact_lock($1::pg_catalog.int8)', [lockId]),
      ];
      for (const sent of flight) sent.catch(() => undefined);
      for (const sent of flight) await sent;
      await this.checkSchema(client);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.sql.migrations} (
        version    pg_catalog.int4        NOT NULL PRIMARY KEY,
        name       pg_catalog.text        NOT NULL,
        applied_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
      )`);
      const applied = (await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${this.sql.migrations}`)).rows[0]?.version ?? 0;
      const latest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
      if (applied > latest) {
        throw new CheckpointError(
          'UNSUPPORTED_SCHEMA',
          `PostgreSQL ${this.conn.where}: database schema version ${applied} is newer than this code knows (${latest}); upgrade the code`,
          { field: 'ttc_schema_migrations', actual: applied, supported: String(latest) },
        );
      }
      // The steps run with the store's schema first in the search_path: nothing in it may come from an untrusted role.
      if (applied < latest) await this.assertTrustedOwners(client, true);
      for (const step of POSTGRES_MIGRATIONS) {
        if (step.version <= applied) continue;
        // The released steps name tables unqualified: they are created in the store's schema.
        await client.query(`SET LOCAL search_path TO ${quoteIdent(this.schema)}, pg_catalog, pg_temp`);
        await client.query(step.sql);
        await client.query('SET LOCAL search_path TO pg_catalog, pg_temp');
        await client.query(`INSERT INTO ${this.sql.migrations} (version, name) VALUES ($1, $2)`, [step.version, step.name]);
      }
      await client.query('COMMIT');
    } catch (error) {
      if (classifyPgError(error).kind === 'lost' && !isCheckpointError(error)) broken = error as Error;
      else {
        await client.query('ROLLBACK').catch((rollback: unknown) => {
          broken = rollback as Error;
        });
      }
      if (isCheckpointError(error)) throw error;
      throw this.conn.unavailable('migrate', error);
    } finally {
      client.release(broken);
    }
  }

  /**
   * Before the first migration in `this.schema`: the schema must exist, and a store table this
   * role owns in another schema (where an earlier version, following the role's search_path,
   * created it) is refused rather than silently starting an empty store beside it.
   */
  private async checkSchema(client: PoolClient): Promise<void> {
    const found = await client.query<{ here: boolean; migrated: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1) AS here, pg_catalog.to_regclass($2) IS NOT NULL AS migrated`,
      [this.schema, this.sql.migrations],
    );
    if (!found.rows[0]?.here) {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `PostgreSQL ${this.conn.where}: schema ${JSON.stringify(this.schema)} does not exist; create it (CREATE SCHEMA ${this.schema} AUTHORIZATION <store role>) or set postgresSchema (TTC_POSTGRES_SCHEMA)`,
        { field: 'postgresSchema', where: this.conn.where },
      );
    }
    await this.assertTrustedOwners(client, false);
    if (found.rows[0].migrated) return;
    const elsewhere = await client.query<{ nspname: string }>(
      `SELECT n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relname = 'ttc_checkpoints' AND c.relkind = 'r' AND c.relowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AND n.nspname <> $1
       ORDER BY n.nspname LIMIT 1`,
      [this.schema],
    );
    const other = elsewhere.rows[0]?.nspname;
    if (other !== undefined) {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `PostgreSQL ${this.conn.where}: this role's ttc_checkpoints table is in schema ${JSON.stringify(other)}, not in the configured schema ${JSON.stringify(this.schema)}; set postgresSchema (TTC_POSTGRES_SCHEMA) to ${JSON.stringify(other)}`,
        { field: 'postgresSchema', where: this.conn.where, found: other },
      );
    }
  }

  /**
   * Refuses objects in the store's schema owned by a role the store does not trust, for a schema
   * other roles may create in (`public` on PostgreSQL 14 and older grants CREATE to PUBLIC):
   * - always: the store's tables (`ttc_checkpoints`, `ttc_schema_migrations`,
   *   `ttc_conversation_entries`) and any relation
   *   of those names, which a co-tenant could create first and then read or alter;
   * - with `definitions` (before a migration step, which runs with the store's schema first in
   *   the search_path): every type, function and operator, which could stand in for
   *   `pg_catalog.text` or a built-in function the step uses.
   * Trusted owners: the current role and the roles it is a member of, the schema's owner (who
   * can drop anything in it anyway) and superusers.
   *
   * @throws {@link CheckpointError} INVALID_CONFIG (`details.field` postgresSchema, `owner`, `object`).
   */
  private async assertTrustedOwners(client: PoolClient, definitions: boolean): Promise<void> {
    const found = await client.query<{ kind: string; name: string; owner: string }>(
      `WITH s AS (SELECT oid, nspowner FROM pg_catalog.pg_namespace WHERE nspname = $1),
       objects AS (
         SELECT 'relation' AS kind, c.relname::text AS name, c.relowner AS owner FROM pg_catalog.pg_class c, s WHERE c.relnamespace = s.oid AND c.relname IN ('ttc_checkpoints', 'ttc_schema_migrations', 'ttc_conversation_entries')
         UNION ALL SELECT 'type', t.typname::text, t.typowner FROM pg_catalog.pg_type t, s WHERE $2 AND t.typnamespace = s.oid
         UNION ALL SELECT 'function', p.proname::text, p.proowner FROM pg_catalog.pg_proc p, s WHERE $2 AND p.pronamespace = s.oid
         UNION ALL SELECT 'operator', o.oprname::text, o.oprowner FROM pg_catalog.pg_operator o, s WHERE $2 AND o.oprnamespace = s.oid
       )
       SELECT o.kind, o.name, r.rolname::text AS owner FROM objects o JOIN pg_catalog.pg_roles r ON r.oid = o.owner, s
       WHERE o.owner <> s.nspowner AND NOT r.rolsuper AND NOT pg_catalog.pg_has_role(current_user, o.owner, 'MEMBER')
       ORDER BY o.kind DESC, o.name LIMIT 1`,
      [this.schema, definitions],
    );
    const bad = found.rows[0];
    if (bad === undefined) return;
    throw new CheckpointError(
      'INVALID_CONFIG',
      `PostgreSQL ${this.conn.where}: ${bad.kind} ${JSON.stringify(bad.name)} in schema ${JSON.stringify(this.schema)} is owned by role ${JSON.stringify(bad.owner)}, which this store does not trust (not this role, a role it belongs to, the schema's owner or a superuser); another role can create in this schema. Use a schema only the store's role can create in (CREATE SCHEMA ttc AUTHORIZATION <store role>, TTC_POSTGRES_SCHEMA=ttc) or REVOKE CREATE ON SCHEMA ${this.schema} FROM PUBLIC`,
      { field: 'postgresSchema', where: this.conn.where, owner: bad.owner, object: `${bad.kind} ${bad.name}` },
    );
  }
}
