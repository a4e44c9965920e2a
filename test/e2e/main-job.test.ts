/**
 * The main job end to end (issue 4): real dev server, real provider process, a real worker
 * process that SIGKILLs itself right after a create_ticket effect, then a fleet of two. The
 * retry must not apply the effect again and must deliver the right result.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMainJob, type RunReport } from '../../src/demo/main-job';

jest.setTimeout(300_000);

describe('the main job', () => {
  let dir: string;
  let reports: RunReport[];
  const lines: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-main-job-'));
    reports = await runMainJob({ workDir: dir, log: (line) => lines.push(line) });
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('kills the first worker with SIGKILL right after an effect', () => {
    expect(lines).toContain('worker-1 exited: SIGKILL');
  });

  it('finishes all three runs with every effect applied exactly once and every delivered result equal to what the provider applied', () => {
    expect(reports.map((r) => [r.transcript, r.status, r.toolCalls, r.effectsApplied, r.duplicates, r.wrongResults])).toEqual([
      ['anthropic-ticket', 'completed', 1, 1, 0, 0],
      ['openai-triage', 'completed', 2, 2, 0, 0],
      ['anthropic-batch', 'completed', 3, 3, 0, 0],
    ]);
  });

  it('recovers the effect of the killed attempt by lookup instead of running it again', () => {
    expect(reports.reduce((n, r) => n + r.recoveredByLookup, 0)).toBeGreaterThanOrEqual(1);
  });

  it('pauses the send_email whose answer was lost, and the operator resolves it as applied', () => {
    expect(reports.find((r) => r.transcript === 'openai-triage')?.pausedAsUnknown).toBe(1);
    expect(lines.some((l) => /paused on call_\w+ \(OUTCOME_UNKNOWN\); operator finds the email in the outbox/.test(l))).toBe(true);
  });
});
