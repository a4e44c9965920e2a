/**
 * Adversarial review: `ttc worker`'s own log output. The SDK's default logger
 * writes "Activity failed" with the failure's stack (whose message quotes tool or provider error
 * text) and the workflow's warnings with model-chosen call ids, tool names and error detail,
 * all raw: an ESC, CSI or bidi override in them reached the operator's terminal. The worker
 * command installs a logger that escapes every line (line feeds between lines kept).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createWorkerLogger } from '../../src/cli/worker-log';

/** Independent oracle: characters that must never reach a terminal raw (line feeds between lines are fine). */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;
const EVIL = '\u001b[2J\u001b]0;pwned\u0007\u009b31m\u202egnp.exe\u2066x\u2069\u200e\r\u2028';

function captured(run: (logger: ReturnType<typeof createWorkerLogger>) => void): string {
  let text = '';
  run(
    createWorkerLogger('INFO', (line) => {
      text += line;
    }),
  );
  return text;
}

describe('ttc worker log lines are terminal-safe', () => {
  test('"Activity failed" with tool error text in the failure message and stack: no raw control or bidi character, the stack keeps its lines', () => {
    const error = ApplicationFailure.create({ type: 'TOOL_ERROR', message: `provider said ${EVIL}`, nonRetryable: false, cause: new Error(`inner ${EVIL}`) });
    const text = captured((logger) => logger.warn('Activity failed', { error, durationMs: 12, activityType: `evil${EVIL}` }));

    expect(text).not.toMatch(UNSAFE);
    expect(text).toContain('provider said \\u001b[2J');
    expect(text).toContain('\\u202egnp.exe');
    expect(text.split('\n').length).toBeGreaterThan(3); // the stack frames stay one a line
    expect(text.endsWith('\n')).toBe(true);
  });

  test('a workflow warning with a model-chosen call id and tool name in its metadata, and an unsafe message', () => {
    const text = captured((logger) => logger.warn(`tool call failed ${EVIL}`, { callId: `call-${EVIL}`, toolName: `t${EVIL}`, detail: EVIL }));

    expect(text).not.toMatch(UNSAFE);
    expect(text).toContain('tool call failed \\u001b[2J');
    expect(text.endsWith('}\n')).toBe(true);
  });

  test('levels below the configured one are dropped', () => {
    expect(captured((logger) => logger.debug('Activity completed', { durationMs: 1 }))).toBe('');
  });

  test('ttc worker installs this logger in the Temporal runtime', () => {
    const source = readFileSync(join(__dirname, '../../src/cli/worker.ts'), 'utf8');
    expect(source).toMatch(/Runtime\.install\(\{[^}]*logger: createWorkerLogger\(\)/);
  });
});
