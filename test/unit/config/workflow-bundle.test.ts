/**
 * `TTC_WORKFLOW_BUNDLE` / `worker.workflowBundle`: a prebuilt workflow bundle for the worker
 * (the crash suite uses it so its worker starts skip webpack).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { resolveConfig } from '../../../src/config';

describe('worker.workflowBundle (TTC_WORKFLOW_BUNDLE)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-bundle-'));
    writeFileSync(join(dir, 'workflow-bundle.js'), '// bundle');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is null by default: the worker bundles src/workflows at start', () => {
    expect(resolveConfig({}, {}).worker).toEqual({ workflowBundlePath: null });
  });

  it('takes an existing file from the environment, as an absolute path', () => {
    expect(resolveConfig({}, { TTC_WORKFLOW_BUNDLE: join(dir, 'workflow-bundle.js') }).worker.workflowBundlePath).toBe(join(dir, 'workflow-bundle.js'));
  });

  it('refuses a file that does not exist with INVALID_CONFIG naming the key', () => {
    let caught: unknown;
    try {
      resolveConfig({}, { TTC_WORKFLOW_BUNDLE: join(dir, 'missing.js') });
    } catch (error) {
      caught = error;
    }
    expect(isCheckpointError(caught, 'INVALID_CONFIG')).toBe(true);
    expect((caught as { details: unknown }).details).toEqual({ field: 'TTC_WORKFLOW_BUNDLE' });
  });
});
