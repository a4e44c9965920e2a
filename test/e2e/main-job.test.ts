/**
 * The main job end to end: real dev server, real provider process, a real worker
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
  const timers = { before: 0, after: 0 };
  const activeTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-main-job-'));
    timers.before = activeTimers();
    reports = await runMainJob({ workDir: dir, log: (line) => lines.push(line) });
    timers.after = activeTimers();
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves no timer behind once it returns, so `npm start` exits as soon as its report is printed', () => {
    expect(timers.after).toBeLessThanOrEqual(timers.before);
  });

  it('kills one worker right after an effect and another right after a result was stored, both with SIGKILL', () => {
    expect(lines).toContain('worker-1 exited: SIGKILL');
    expect(lines).toContain('worker-2 exited: SIGKILL');
  });

  it('finishes all three runs with every effect applied exactly once and every delivered result equal to what the provider applied', () => {
    expect(reports.map((r) => [r.transcript, r.status, r.toolCalls, r.effectsApplied, r.duplicates, r.wrongResults])).toEqual([
      ['anthropic-ticket', 'completed', 1, 1, 0, 0],
      ['openai-triage', 'completed', 2, 2, 0, 0],
      ['anthropic-batch', 'completed', 3, 3, 0, 0],
    ]);
  });

  it('reconciles the call whose worker died after the effect (lookup), and delivers the call whose worker died after storing from the store', () => {
    const sum = (pick: (r: RunReport) => number): number => reports.reduce((n, r) => n + pick(r), 0);
    expect([sum((r) => r.recoveredByLookup), sum((r) => r.recoveredFromStore)]).toEqual([1, 1]);
  });

  it('pauses the send_email whose answer was lost, and the operator resolves it as applied', () => {
    // Which run sends the first email (the one whose answer the provider drops) depends on scheduling.
    expect(reports.reduce((n, r) => n + r.pausedAsUnknown, 0)).toBe(1);
    expect(lines.some((l) => /paused on (call|toolu)_\w+ \(OUTCOME_UNKNOWN\); operator finds the email in the outbox/.test(l))).toBe(true);
  });
});
