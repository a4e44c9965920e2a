/**
 * The worker's shutdown grace time must cover its tools' deadlines: on SIGTERM
 * a call still running when the grace time ends loses its worker mid-request, so every deploy
 * would pause such runs as unknown outcomes. The worker refuses to start (INVALID_CONFIG with the
 * figures) when the grace time is below the longest tool `callDeadlineMs` plus 5 s; the default
 * grace time (45 s) covers the default deadline (30 s).
 */
import type { ToolDefinition } from '../../../src/activities';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { loadConfig, resolveConfig } from '../../../src/config';
import { assertShutdownGraceCoversTools, createAgentWorker, DEFAULT_TOOL_CALL_DEADLINE_MS, SHUTDOWN_GRACE_MARGIN_MS } from '../../../src/worker';

/** Only what the check reads (a real tool also has revision, input schema and execute). */
function tool(name: string, callDeadlineMs?: number): ToolDefinition<any> {
  return { name, ...(callDeadlineMs === undefined ? {} : { callDeadlineMs }) } as unknown as ToolDefinition<any>;
}

function refusal(run: () => unknown): { code: string; message: string; details: Record<string, unknown> } {
  try {
    run();
  } catch (error) {
    if (isCheckpointError(error)) return error as unknown as { code: string; message: string; details: Record<string, unknown> };
    throw error;
  }
  throw new Error('expected INVALID_CONFIG');
}

describe('shutdown grace time against the tools’ deadlines', () => {
  test('the default grace time is 45 s (also in temporal.config.ts) and covers tools with the default 30 s deadline', () => {
    expect(resolveConfig({}, {}).timeouts.shutdownGraceMs).toBe(45_000);
    expect(loadConfig({ rootDir: `${__dirname}/../../..`, env: {} }).timeouts.shutdownGraceMs).toBe(45_000);
    expect(DEFAULT_TOOL_CALL_DEADLINE_MS).toBe(30_000);
    expect(SHUTDOWN_GRACE_MARGIN_MS).toBe(5_000);
    expect(() => assertShutdownGraceCoversTools(45_000, [tool('create_ticket'), tool('send_email')])).not.toThrow();
    expect(() => assertShutdownGraceCoversTools(35_000, [tool('create_ticket')])).not.toThrow();
  });

  test('the old default of 10 s is refused with the figures: grace, the tool with the longest deadline, its deadline', () => {
    const error = refusal(() => assertShutdownGraceCoversTools(10_000, [tool('quick', 2_000), tool('create_ticket'), tool('lookup_order', 8_000)]));

    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details).toEqual({
      field: 'TTC_SHUTDOWN_GRACE_TIME',
      shutdownGraceMs: 10_000,
      toolName: 'create_ticket',
      callDeadlineMs: 30_000,
      marginMs: 5_000,
      requiredMs: 35_000,
    });
    expect(error.message).toContain('TTC_SHUTDOWN_GRACE_TIME (10000 ms)');
    expect(error.message).toContain('tool "create_ticket" has callDeadlineMs 30000 ms');
    expect(error.message).toContain('at least 35000 ms');
  });

  test('a tool with a long declared deadline needs a longer grace time; short deadlines allow a short one', () => {
    const slow = refusal(() => assertShutdownGraceCoversTools(45_000, [tool('create_ticket'), tool('render_video', 120_000)]));

    expect(slow.details).toMatchObject({ toolName: 'render_video', callDeadlineMs: 120_000, requiredMs: 125_000 });
    expect(() => assertShutdownGraceCoversTools(125_000, [tool('render_video', 120_000)])).not.toThrow();
    expect(() => assertShutdownGraceCoversTools(6_000, [tool('ping', 1_000)])).not.toThrow();
    expect(refusal(() => assertShutdownGraceCoversTools(34_999, [tool('create_ticket')])).details.requiredMs).toBe(35_000);
  });

  test('a worker without tools has nothing to cover', () => {
    expect(() => assertShutdownGraceCoversTools(1_000, [])).not.toThrow();
  });

  test('createAgentWorker refuses to start before it opens the store or connects to Temporal', async () => {
    const config = resolveConfig({}, { TTC_SHUTDOWN_GRACE_TIME: '10s', TTC_STORE_URL: 'sqlite:/nonexistent-dir/never-opened.db', TEMPORAL_ADDRESS: '127.0.0.1:1' });

    await expect(createAgentWorker({ config, tools: [tool('create_ticket')], models: [] })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      details: { field: 'TTC_SHUTDOWN_GRACE_TIME', shutdownGraceMs: 10_000, toolName: 'create_ticket', callDeadlineMs: 30_000 },
    });
  });
});
