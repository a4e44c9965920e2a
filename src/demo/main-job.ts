/**
 * The main job (README quick start): the whole product on one host, end to end. It starts a
 * Temporal dev server and the demo provider, a worker that kills itself with SIGKILL right
 * after a create_ticket effect (before the result is stored), a second one that kills itself
 * right after a result is stored (before delivery), then a fleet of two workers;
 * runs three agent runs from recorded transcripts; plays the operator for a send_email whose
 * answer was lost (checks the outbox, resolves it as applied); and prints a table per run.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connectClient, scriptedRunInput, startAgentRun } from '../client';
import { resolveConfig } from '../config';
import { startDevServer } from '../dev/dev-server';
import { parseCallBindingId } from '../checkpoint/call-identity';
import { openCheckpointStore } from '../stores/open-checkpoint-store';
import { spawnWorker, type WorkerProcess } from '../dev/worker-process';
import { resolveOutcomeUpdate, runStatusQuery } from '../workflows/agent/messages';
import type { AgentWorkflowResult } from '../workflows/agent/types';
import { startProvider } from '../../examples/provider/start-provider';
import { TRANSCRIPTS_DIR } from '../cli/models';
import { printTable } from '../cli/table';

/** One row of the report. */
export interface RunReport {
  readonly workflowId: string;
  readonly transcript: string;
  readonly status: string;
  readonly toolCalls: number;
  readonly effectsApplied: number;
  readonly duplicates: number;
  /** Delivered results that differ from what the provider applied (ticket id or message id). */
  readonly wrongResults: number;
  readonly recoveredFromStore: number;
  /** Calls whose earlier attempt died mid-call and that were reconciled by lookup or a same-key repeat (the checkpoint records the takeover). */
  readonly recoveredByLookup: number;
  readonly pausedAsUnknown: number;
}

const TRANSCRIPTS = ['anthropic-ticket', 'openai-triage', 'anthropic-batch'];

/**
 * Runs the main job in `workDir` (a fresh folder under `.data/` by default) and returns the
 * report; `log` receives progress lines.
 */
export async function runMainJob(options: { workDir?: string; log?: (line: string) => void } = {}): Promise<RunReport[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const workDir = resolve(options.workDir ?? join('.data', `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`));
  mkdirSync(workDir, { recursive: true });
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const server = await startDevServer({ dbFile: join(workDir, 'temporal.db') });
    cleanups.push(() => server.stop());
    log(`Temporal dev server ${server.address} (${server.startupMs} ms to start)`);
    const provider = await startProvider({ dbFile: join(workDir, 'provider.db'), faults: true, stderr: 'ignore' });
    cleanups.push(() => provider.stop());
    log(`demo provider ${provider.url}`);
    // The provider will apply the next email and then drop the connection: an unknown outcome.
    await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/emails' });

    const env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_TASK_QUEUE: 'agent-tools-demo',
      TTC_STORE_URL: `sqlite:${join(workDir, 'checkpoints.db')}`,
      TTC_PROVIDER_URL: provider.url,
      TTC_TOOL_HEARTBEAT_TIMEOUT: '2s',
      // A short heartbeat timeout (quick recovery in the demo) needs a busy timeout well below it.
      TTC_SQLITE_BUSY_TIMEOUT: '1s',
      TTC_TOOL_START_TO_CLOSE_TIMEOUT: '30s',
      TTC_RETRY_INITIAL_INTERVAL: '200ms',
      TTC_RETRY_MAXIMUM_INTERVAL: '2s',
    };
    const config = resolveConfig({}, { ...process.env, ...env });
    const workers: WorkerProcess[] = [];
    cleanups.push(() => Promise.all(workers.map((w) => w.stop())));
    // Each doomed worker runs one activity at a time, so exactly one call is in flight when it dies.
    const crashOnce = async (identity: string, point: 'after-effect' | 'after-result-stored', toolName?: string): Promise<void> => {
      const doomed = await spawnWorker({ env, identity, crashAt: { point, toolName }, maxConcurrentActivities: 1 });
      workers.push(doomed);
      log(
        `${identity} started, armed to SIGKILL itself ${point === 'after-effect' ? `right after a ${toolName} effect, before the result is stored` : 'right after a result is stored, before it is delivered'}`,
      );
      let timer: NodeJS.Timeout | undefined;
      const how = await Promise.race([doomed.exited, new Promise((done) => (timer = setTimeout(() => done('still running after 60 s'), 60_000)))]);
      clearTimeout(timer); // else it holds the process for up to 60 s after the report
      log(`${identity} exited: ${String(how)}`);
    };
    const started = crashOnce('worker-1', 'after-effect', 'create_ticket');

    const { client, close } = await connectClient(config);
    cleanups.push(close);
    const runs = await Promise.all(
      TRANSCRIPTS.map(async (id) => {
        const transcript = JSON.parse(readFileSync(join(TRANSCRIPTS_DIR, `${id}.json`), 'utf8')) as unknown;
        const handle = await startAgentRun(client, config, scriptedRunInput(config, transcript, { prompt: `demo run ${id}` }), `demo-${id}-${Date.now()}`);
        log(`started run ${handle.workflowId}`);
        return { id, handle };
      }),
    );
    await started;
    await crashOnce('worker-2', 'after-result-stored');
    for (const identity of ['worker-3', 'worker-4']) {
      workers.push(await spawnWorker({ env, identity }));
      log(`${identity} started (the fleet: two workers, one task queue, one store)`);
    }

    const resolved = new Set<string>();
    const results = new Map<string, AgentWorkflowResult>();
    const deadline = Date.now() + 180_000;
    while (results.size < runs.length) {
      if (Date.now() > deadline) throw new Error('the demo runs did not finish within 3 minutes');
      for (const { handle } of runs) {
        if (results.has(handle.workflowId)) continue;
        const description = await handle.describe();
        if (description.status.name !== 'RUNNING') {
          results.set(handle.workflowId, await handle.result());
          continue;
        }
        const status = await handle.query(runStatusQuery);
        if (status.phase === 'paused' && status.paused && !resolved.has(`${handle.workflowId}/${status.paused.callId}`)) {
          const call = status.pendingCalls.find((c) => c.callId === status.paused!.callId);
          // The operator checks the provider's outbox for the email the paused call meant to send.
          const input = call?.modelInput as { to?: string; subject?: string } | undefined;
          const sent = (await provider.client.listEmails()).find((e) => e.to === input?.to && e.subject === input?.subject);
          log(
            `run ${handle.workflowId} paused on ${status.paused.callId} (${status.paused.errorType}); operator finds the email ${sent ? `in the outbox (${sent.messageId})` : 'absent'}`,
          );
          await handle.executeUpdate(resolveOutcomeUpdate, {
            args: [
              sent
                ? {
                    callId: status.paused.callId,
                    pauseId: status.paused.pauseId,
                    resolution: 'applied',
                    result: { messageId: sent.messageId },
                    receipt: { messageId: sent.messageId, sentAt: sent.sentAt },
                    reason: 'found in the provider outbox',
                  }
                : { callId: status.paused.callId, pauseId: status.paused.pauseId, resolution: 'absent', reason: 'not in the provider outbox' },
            ],
          });
          resolved.add(`${handle.workflowId}/${status.paused.callId}`);
        }
      }
      await new Promise((done) => setTimeout(done, 300));
    }

    // The store keeps the evidence of a takeover: a reconciled call's fence names the one it replaced.
    const store = await openCheckpointStore(env.TTC_STORE_URL);
    const reconciled = new Set(
      (await store.listByStatus(['delivered'], { limit: 1_000 }))
        .filter((r) => r.execution?.previousAttemptId)
        .map((r) => parseCallBindingId(r.binding.callId))
        .map((id) => (id === null ? '' : `${id.workflowId}/${id.callId}`)),
    );
    await store.close();
    const effects = await provider.client.effects();
    const emails = await provider.client.listEmails();
    const reports: RunReport[] = [];
    for (const { id, handle } of runs) {
      const result = results.get(handle.workflowId)!;
      let applied = 0;
      let duplicates = 0;
      let wrongResults = 0;
      for (const call of result.calls) {
        let count = 0;
        const output = call.outcome?.ok && 'output' in call.outcome ? (call.outcome.output as { ticketId?: string; messageId?: string }) : null;
        if (call.toolName === 'create_ticket' && call.idempotencyKey) {
          count = effects.byIdempotencyKey[call.idempotencyKey] ?? 0;
          const ticket = await provider.client.findTicketByKey(call.idempotencyKey);
          if (ticket?.ticketId !== output?.ticketId) wrongResults += 1;
        } else if (call.toolName === 'send_email') {
          const sent = emails.find((e) => e.messageId === output?.messageId);
          if (sent === undefined) wrongResults += 1;
          count = sent ? emails.filter((e) => e.to === sent.to && e.subject === sent.subject && e.body === sent.body).length : 0;
        } else if (call.status === 'completed') count = 1;
        applied += Math.min(count, 1);
        duplicates += Math.max(count - 1, 0);
      }
      reports.push({
        workflowId: handle.workflowId,
        transcript: id,
        status: result.status,
        toolCalls: result.calls.length,
        effectsApplied: applied,
        duplicates,
        wrongResults,
        recoveredFromStore: result.calls.filter((c) => c.source === 'store').length,
        recoveredByLookup: result.calls.filter((c) => c.source === 'lookup' || c.source === 'same-key-repeat' || reconciled.has(`${handle.workflowId}/${c.callId}`)).length,
        pausedAsUnknown: result.calls.filter((c) => c.status.startsWith('resolved-') || c.status === 'abandoned').length,
      });
    }
    log('');
    const sum = (pick: (r: RunReport) => number): number => reports.reduce((n, r) => n + pick(r), 0);
    printTable(
      ['run', 'status', 'tool calls', 'effects applied', 'duplicates', 'wrong results', 'recovered from store', 'recovered by lookup/key', 'paused as unknown'],
      [
        ...reports.map((r) => [r.transcript, r.status, r.toolCalls, r.effectsApplied, r.duplicates, r.wrongResults, r.recoveredFromStore, r.recoveredByLookup, r.pausedAsUnknown]),
        [
          'all runs',
          '',
          sum((r) => r.toolCalls),
          sum((r) => r.effectsApplied),
          sum((r) => r.duplicates),
          sum((r) => r.wrongResults),
          sum((r) => r.recoveredFromStore),
          sum((r) => r.recoveredByLookup),
          sum((r) => r.pausedAsUnknown),
        ],
      ],
      log,
    );
    log('');
    log(`provider: ${effects.total} effects applied in all, ${effects.duplicates.length} applied more than once`);
    log(`work folder ${workDir}`);
    return reports;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}
