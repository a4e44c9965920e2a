/**
 * Jest global teardown: stops the PostgreSQL server `global-setup.ts` started (if it did) and
 * deletes its files.
 */
import type { PostgresServer } from './postgres';

export default async function globalTeardown(): Promise<void> {
  const server = (globalThis as { __TTC_POSTGRES__?: PostgresServer }).__TTC_POSTGRES__;
  if (server === undefined) return;
  await server.stop();
  delete process.env.DATABASE_URL;
}
