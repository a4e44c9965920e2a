/**
 * `TTC_SQLITE_BUSY_TIMEOUT` and the heartbeat rule: with a SQLite store the
 * tool heartbeat timeout must be at least 2 × the busy timeout, or the configuration is refused.
 * The rule dates from when better-sqlite3 waited for another process's lock on the worker's
 * event loop (stopping heartbeats for up to the busy timeout); now the store waits on
 * its own worker thread and the loop keeps turning (`test/unit/stores/sqlite-event-loop.test.ts`),
 * so the rule is now only a conservative bound that `src/config.ts` still enforces.
 */
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { HEARTBEAT_TO_BUSY_TIMEOUT_RATIO, resolveConfig, type ConfigInput } from '../../../src/config';
import { storeOptions } from '../../../src/worker';

function refusal(env: Record<string, string>, file: ConfigInput = {}): { code: string; message: string; details: Record<string, unknown> } {
  try {
    resolveConfig(file, env);
  } catch (error) {
    if (isCheckpointError(error)) return error as unknown as { code: string; message: string; details: Record<string, unknown> };
    throw error;
  }
  throw new Error(`expected INVALID_CONFIG for ${JSON.stringify(env)}`);
}

describe('SQLite busy timeout (TTC_SQLITE_BUSY_TIMEOUT) and the heartbeat timeout', () => {
  test('defaults: busy timeout 5 s, heartbeat 10 s (= 2 × 5 s) pass; the store is opened with that busy timeout', () => {
    const config = resolveConfig({}, {});

    expect(config.store.sqliteBusyTimeoutMs).toBe(5_000);
    expect(config.timeouts.toolHeartbeatMs).toBe(10_000);
    expect(HEARTBEAT_TO_BUSY_TIMEOUT_RATIO).toBe(2);
    expect(storeOptions(config).busyTimeoutMs).toBe(5_000);
  });

  test('the busy timeout comes from the environment or the file, 0 allowed; a PostgreSQL store gets no busy timeout option', () => {
    expect(resolveConfig({}, { TTC_SQLITE_BUSY_TIMEOUT: '1500ms', TTC_TOOL_HEARTBEAT_TIMEOUT: '3s' }).store.sqliteBusyTimeoutMs).toBe(1_500);
    expect(resolveConfig({ store: { sqliteBusyTimeout: '2s' } }, {}).store.sqliteBusyTimeoutMs).toBe(2_000);
    expect(resolveConfig({}, { TTC_SQLITE_BUSY_TIMEOUT: '0', TTC_TOOL_HEARTBEAT_TIMEOUT: '1s' }).store.sqliteBusyTimeoutMs).toBe(0);
    const pg = resolveConfig({}, { TTC_STORE_URL: 'postgres://ttc@db.internal/ttc' });
    expect(storeOptions(pg)).not.toHaveProperty('busyTimeoutMs');
  });

  test.each([
    ['a heartbeat timeout below 2 × the busy timeout', { TTC_TOOL_HEARTBEAT_TIMEOUT: '2s' }, 2_000, 5_000],
    ['a busy timeout raised past half the heartbeat timeout', { TTC_SQLITE_BUSY_TIMEOUT: '6s' }, 10_000, 6_000],
    ['a heartbeat timeout just under the rule', { TTC_TOOL_HEARTBEAT_TIMEOUT: '1999ms', TTC_SQLITE_BUSY_TIMEOUT: '1s' }, 1_999, 1_000],
  ])('%s is INVALID_CONFIG naming both variables and both figures', (_label, env, heartbeatMs, busyMs) => {
    const error = refusal(env);

    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details).toMatchObject({ field: 'TTC_TOOL_HEARTBEAT_TIMEOUT', related: 'TTC_SQLITE_BUSY_TIMEOUT', toolHeartbeatMs: heartbeatMs, sqliteBusyTimeoutMs: busyMs });
    expect(error.message).toContain(`TTC_TOOL_HEARTBEAT_TIMEOUT (${heartbeatMs} ms)`);
    expect(error.message).toContain(`TTC_SQLITE_BUSY_TIMEOUT (${busyMs} ms)`);
  });

  test('the rule holds for values from the config file too', () => {
    expect(refusal({}, { timeouts: { toolHeartbeat: '4s' }, store: { sqliteBusyTimeout: '3s' } }).details.field).toBe('TTC_TOOL_HEARTBEAT_TIMEOUT');
  });

  test('with a PostgreSQL store the SQLite busy timeout does not constrain the heartbeat', () => {
    expect(resolveConfig({}, { TTC_STORE_URL: 'postgres://ttc@db.internal/ttc', TTC_TOOL_HEARTBEAT_TIMEOUT: '2s' }).timeouts.toolHeartbeatMs).toBe(2_000);
  });

  test.each(['-1s', 'soon', '11m'])('a busy timeout of %s is INVALID_CONFIG naming TTC_SQLITE_BUSY_TIMEOUT', (value) => {
    const error = refusal({ TTC_SQLITE_BUSY_TIMEOUT: value, TTC_TOOL_HEARTBEAT_TIMEOUT: '1h' });

    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details.field).toBe('TTC_SQLITE_BUSY_TIMEOUT');
  });
});
