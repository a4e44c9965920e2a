/**
 * The PostgreSQL store's statements on its pool: one read, one autocommitted write, or one
 * transaction on one connection, each failure sorted into what the store reports: a statement
 * never sent or refused (STORE_UNAVAILABLE: nothing written) or a write whose connection was lost
 * after sending ({@link OutcomeUnknown}, which the store settles by re-reading). The hot
 * statements go out named (prepared) until a transaction-mode pooler shows it moves them between
 * server connections; see {@link PgConnection.query}. Answers that arrive together (many
 * connections readable in one poll) settle a few per event-loop turn (`./turn-queue`), so the
 * calls they resume do not hold the loop all at once.
 */
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { classifyPgError } from './pg-errors';
import { statementName, type PgStatements } from './pg-statements';
import { TurnQueue } from './turn-queue';

/** Most times a write whose outcome was lost (or a group rolled back as a victim) is sent again before the store gives up. */
export const MAX_RESOLVE_ROUNDS = 5;

/** Thrown inside the store when a statement's outcome is unknown; never leaves the store. */
export class OutcomeUnknown extends Error {
  constructor(readonly driverError: unknown) {
    super('outcome unknown');
  }
}

/** The store's connection pool: where its statements go, and how their failures are reported. */
export class PgConnection {
  private closed = false;
  /** Whether the hot statements go out named (prepared); false for good after a pooler showed it moves them between server connections. */
  private named = true;
  /** Successful answers wait here for their turn (a failure settles at once: rare, and its caller stops). */
  private readonly answers = new TurnQueue();

  /**
   * @param where the URL with any password masked, for messages.
   * @param sql the store's statements (which of them go out prepared).
   */
  constructor(
    private readonly pool: Pool,
    readonly where: string,
    private readonly sql: PgStatements,
  ) {}

  /**
   * Runs `work` in one transaction on one connection: BEGIN is pipelined with `work`'s first
   * statement (sent in the same flight, pg's pipeline mode), COMMIT when it returns, ROLLBACK when
   * it throws (its CheckpointError is rethrown as is). Through a transaction-mode pooler the
   * whole transaction runs on one server connection (the pooler holds it until COMMIT/ROLLBACK).
   * @throws OutcomeUnknown when the connection was lost after BEGIN was sent; STORE_UNAVAILABLE
   *   for a refused statement (rolled back, nothing written).
   */
  async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const result = await this.runTransaction(work);
    await this.answerTurn();
    return result;
  }

  /** Resolves in this store's turn to settle one more answer (`./turn-queue`): await it after a successful answer the store got on its own connection. */
  answerTurn(): Promise<void> {
    return this.answers.turn();
  }

  private async runTransaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      // Not awaited: `work`'s first statement goes out behind it. Should BEGIN fail, every
      // statement behind it fails too (only a broken or aborted session refuses a BEGIN).
      const begun = client.query('BEGIN');
      begun.catch(() => undefined);
      let result: T;
      try {
        result = await work(client);
      } finally {
        await begun;
      }
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (classifyPgError(error).kind === 'lost' && !isCheckpointError(error)) {
        broken = error as Error;
        throw new OutcomeUnknown(error);
      }
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback as Error;
      });
      if (isCheckpointError(error)) throw error;
      throw this.unavailable('write', error);
    } finally {
      client.release(broken);
    }
  }

  /** Runs one read-only statement (one round trip; see {@link query}). @throws STORE_UNAVAILABLE for any driver error. */
  async read<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    const rows = await this.runRead<R>(text, values);
    await this.answerTurn();
    return rows;
  }

  private async runRead<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    const client = await this.connect();
    try {
      const result = await this.query<R>(client, text, values);
      client.release();
      return result.rows;
    } catch (error) {
      client.release(classifyPgError(error).kind === 'lost' || isFatal(error) ? (error as Error) : undefined);
      throw this.unavailable('read', error);
    }
  }

  /**
   * Sends one statement as one Parse/Bind/Describe/Execute/Sync flight: named (prepared once per
   * server connection, under its content-addressed {@link statementName}) when it is one of
   * {@link PgStatements.prepared} and this store has not turned to unnamed statements, else
   * unnamed. A named statement refused because it was already prepared (42P05) or is missing
   * (26000) on the server connection the statement reached, or a pooler's refusal of prepared
   * statements, shows a transaction-mode pooler moving statements between server connections:
   * nothing was executed (the server stops at Parse or Bind), so the store turns to unnamed
   * statements for good and sends the same statement again, unnamed, on the same connection.
   * Through a pooler that supports prepared statements (PgBouncer 1.21+ with
   * max_prepared_statements) or directly, they stay named.
   */
  private async query<R extends QueryResultRow>(client: PoolClient, text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: R[] }> {
    if (!this.named || !this.sql.prepared.has(text)) return client.query<R>({ text, values });
    try {
      return await client.query<R>({ name: statementName(text), text, values });
    } catch (error) {
      if (!isPreparedStatementRefusal(error)) throw error;
      this.named = false;
      // A FATAL refusal (PgBouncer's own) closed the connection: this re-send fails as never sent.
      return client.query<R>({ text, values });
    }
  }

  /**
   * Runs one autocommitted write statement: Parse (or not, when prepared)/Bind/Describe/Execute/
   * Sync in one flight, no BEGIN/COMMIT (one round trip; see {@link query}).
   * @throws OutcomeUnknown when the connection was lost after the statement was handed to it
   *   (`./pg-errors`: `lost`); STORE_UNAVAILABLE when it was never sent or the server or a pooler
   *   refused it (nothing written).
   */
  async write<R extends QueryResultRow = QueryResultRow>(text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: R[] }> {
    const result = await this.runWrite<R>(text, values);
    await this.answerTurn();
    return result;
  }

  private async runWrite<R extends QueryResultRow>(text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: R[] }> {
    const client = await this.connect();
    try {
      const result = await this.query<R>(client, text, values);
      client.release();
      return result;
    } catch (error) {
      const lost = classifyPgError(error).kind === 'lost';
      // A refused statement leaves the connection usable unless the server or pooler closed it (FATAL).
      client.release(lost || isFatal(error) ? (error as Error) : undefined);
      if (lost) throw new OutcomeUnknown(error);
      throw this.unavailable('write', error);
    }
  }

  async connect(): Promise<PoolClient> {
    if (this.closed) throw new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL store ${this.where} is closed`, { where: this.where, reason: 'closed' });
    try {
      return await this.pool.connect();
    } catch (error) {
      throw this.unavailable('connect', error);
    }
  }

  /**
   * STORE_UNAVAILABLE for a statement that was never sent or was refused (nothing written).
   * `details.driverCode`: the SQLSTATE or errno; `details.pooler`: set when a connection pooler
   * refused it or caused the refusal, with a sentence naming the problem.
   */
  unavailable(what: string, error: unknown): CheckpointError {
    const failure = classifyPgError(error);
    const code = failure.code;
    const message = error instanceof Error ? error.message : String(error);
    const hint =
      failure.pooler === null ? '' : ` (${failure.pooler}; the store needs no session state and works through transaction-mode poolers: check the pooler's settings and log)`;
    return new CheckpointError(
      'STORE_UNAVAILABLE',
      `PostgreSQL ${this.where} failed to ${what}: ${code === null ? '' : `${code} `}${message}${hint}; nothing was written, nothing may be claimed or executed`,
      { where: this.where, driverCode: code, ...(failure.pooler === null ? {} : { pooler: failure.pooler }) },
      { cause: error },
    );
  }

  /** Ends the pool, once; every later statement fails closed (STORE_UNAVAILABLE, `reason` closed). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

/**
 * A named statement refused because of where it ran: already prepared (42P05) or missing
 * (26000) on that server connection, or PgBouncer 1.21+'s own prepared-statement refusals.
 */
function isPreparedStatementRefusal(error: unknown): boolean {
  const failure = classifyPgError(error);
  if (failure.kind !== 'refused') return false;
  if (failure.code === '42P05' || failure.code === '26000') return true;
  return failure.code === '08P01' && /prepared statement/i.test(error instanceof Error ? error.message : '');
}

/** A FATAL (or PANIC) error: the server or the pooler closes the connection after it. */
function isFatal(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | null)?.severity;
  return severity === 'FATAL' || severity === 'PANIC';
}
