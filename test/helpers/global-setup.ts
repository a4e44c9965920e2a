/**
 * Jest global setup: when DATABASE_URL is not set, starts one private PostgreSQL server for the
 * whole run (see `./postgres.ts`) and exports its URL as DATABASE_URL, which jest passes to
 * every test. Test files create their own databases on it (`createTestDatabase`).
 */
import { startPostgres, type PostgresServer } from './postgres';

declare global {
  var __TTC_POSTGRES__: PostgresServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) return;
  const server = await startPostgres();
  globalThis.__TTC_POSTGRES__ = server;
  process.env.DATABASE_URL = server.url;
}
