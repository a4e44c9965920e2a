/**
 * A tool's `compensation` declaration: both forms are checked as `defineTool` checks a
 * tool, and a worker whose tool names a compensation tool it does not have is refused when its
 * activities are built.
 */
import { z } from 'zod';
import { isCheckpointError, type CheckpointStore } from '../../../src';
import { createToolActivities, defineTool } from '../../../src/activities';
import { normalizeCompensation, type CompensationByFunction, type CompensationByTool } from '../../../src/activities/tools/compensation-declaration';

const execute = async (): Promise<{ output: null }> => ({ output: null });

function refusal(declare: () => unknown): { code: string; details: unknown; message: string } {
  try {
    declare();
  } catch (error) {
    if (isCheckpointError(error)) return { code: error.code, details: error.details, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('compensation declaration', () => {
  test.each<[string, unknown, string]>([
    ['not an object', 'release', 'compensation'],
    ['an array', [], 'compensation'],
    ['neither form', { undo: true }, 'compensation'],
    ['both forms', { tool: 'release', input: () => ({}), revision: 'r1', execute }, 'compensation'],
    ['a tool name that is empty', { tool: '', input: () => ({}) }, 'compensation.tool'],
    ['a tool form without input()', { tool: 'release' }, 'compensation.input'],
    ['a function form without execute', { revision: 'r1' }, 'compensation.execute'],
    ['a revision that is not a string', { revision: 3, execute }, 'compensation.revision'],
    ['a revision over 128 characters', { revision: 'r'.repeat(129), execute }, 'compensation.revision'],
    ['a lookup that is not a function', { revision: 'r1', execute, lookup: 'by key' }, 'compensation.lookup'],
    ['dedupesByKey that is not a boolean', { revision: 'r1', execute, dedupesByKey: 'yes', keyRetentionMs: 1_000 }, 'compensation.dedupesByKey'],
    ['dedupesByKey without keyRetentionMs', { revision: 'r1', execute, dedupesByKey: true }, 'compensation.keyRetentionMs'],
    ['a keyRetentionMs that is not a positive integer', { revision: 'r1', execute, keyRetentionMs: 1.5 }, 'compensation.keyRetentionMs'],
    ['a callDeadlineMs of 0', { revision: 'r1', execute, callDeadlineMs: 0 }, 'compensation.callDeadlineMs'],
  ])('refuses %s: INVALID_ARGUMENT naming the field', (_, compensation, field) => {
    const refused = refusal(() => defineTool({ name: 'reserve', revision: 'v1', input: z.object({}), execute, compensation: compensation as never }));
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field, toolName: 'reserve' } });
    expect(refused.message).toMatch(/^INVALID_ARGUMENT: tool reserve: compensation/);
  });

  test('the function form comes back frozen, its methods bound to the declaration and dedupesByKey definite', async () => {
    const declaration = {
      revision: 'refund-v1',
      marker: 'mine',
      async execute(this: { marker: string }) {
        return { output: this.marker };
      },
      callDeadlineMs: 2_000,
    };
    const normalized = normalizeCompensation('charge', declaration) as CompensationByFunction;
    expect(Object.isFrozen(normalized)).toBe(true);
    expect(normalized).toMatchObject({ revision: 'refund-v1', dedupesByKey: false, callDeadlineMs: 2_000, keyRetentionMs: undefined, lookup: undefined });
    await expect(normalized.execute({ args: null, output: null, receipt: null }, {} as never)).resolves.toEqual({ output: 'mine' });
  });

  test('the tool form is read from own fields only: a polluted Object.prototype.tool does not turn a function form into a tool form', () => {
    const proto = Object.prototype as { tool?: unknown };
    proto.tool = 'release';
    try {
      const normalized = normalizeCompensation('charge', { revision: 'r1', execute });
      expect(normalized).toMatchObject({ revision: 'r1' });
      expect(Object.hasOwn(normalized!, 'tool')).toBe(false);
    } finally {
      delete proto.tool;
    }
    const byTool = normalizeCompensation('reserve', { tool: 'release', input: (a: { output: unknown }) => a.output }) as CompensationByTool;
    expect(byTool.tool).toBe('release');
    expect(byTool.input({ args: null, output: { id: 1 }, receipt: null })).toEqual({ id: 1 });
  });

  describe('createToolActivities', () => {
    // Building the activities reads no store.
    const store = {} as CheckpointStore;

    test('refuses a compensation by a tool the worker does not have, naming both tools; registers compensateToolCall when it has it', () => {
      const reserve = defineTool({ name: 'reserve', revision: 'v1', input: z.object({}), execute, compensation: { tool: 'release', input: () => ({}) } });
      const release = defineTool({ name: 'release', revision: 'r1', input: z.object({}), execute });
      const refused = refusal(() => createToolActivities({ store, tools: [reserve] }));
      expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'compensation.tool', toolName: 'reserve', compensationTool: 'release' } });
      expect(refused.message).toContain('reserve');
      expect(refused.message).toContain('"release"');
      expect(typeof createToolActivities({ store, tools: [reserve, release] }).compensateToolCall).toBe('function');
    });
  });
});
