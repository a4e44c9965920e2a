/**
 * The model-turn activity: one call to a model adapter, so the model's decision lands in
 * workflow history before any tool runs (SPEC §4 "Agent workflow").
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { isCheckpointError } from '../checkpoint/errors';
import { isModelError } from '../model/errors';
import type { ModelAdapter } from '../model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../model/types';

/** Options of {@link createModelActivities}. */
export interface ModelActivitiesOptions {
  /** Adapter registry; `ModelTurnInput.model` selects one by key. */
  readonly adapters: Readonly<Record<string, ModelAdapter>>;
  /**
   * How often the activity heartbeats while the model answers, so cancellation reaches it and
   * a heartbeat timeout can be set. @default a third of the heartbeat timeout, else 5000 ms
   */
  readonly heartbeatIntervalMs?: number;
}

/** The activities object for `Worker.create({ activities })`. */
export interface ModelActivities {
  runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult>;
}

/** The ApplicationFailure type of an unknown adapter name. */
export const UNKNOWN_MODEL_FAILURE_TYPE = 'UNKNOWN_MODEL';

/**
 * Converts a model-side error into what the activity throws:
 * - `ModelError` → `ApplicationFailure` with `type` = its code, `nonRetryable` = not
 *   `retryable`, details `[details]`, and `nextRetryDelay` = the provider's Retry-After when
 *   it gave one (MODEL_TRANSIENT);
 * - `CheckpointError` (e.g. INVALID_TOOL_INPUT) → `ApplicationFailure` typed by its code, same rule;
 * - anything else (including cancellation) unchanged, so Temporal applies its own policy.
 */
export function toTurnFailure(err: unknown): unknown {
  if (isModelError(err)) {
    return ApplicationFailure.create({
      message: err.message,
      type: err.code,
      nonRetryable: !err.retryable,
      details: [err.details],
      cause: err,
      ...(err.retryable && err.retryAfterMs !== null ? { nextRetryDelay: err.retryAfterMs } : {}),
    });
  }
  if (isCheckpointError(err)) {
    return ApplicationFailure.create({
      message: err.message,
      type: err.code,
      nonRetryable: !err.retryable,
      details: [err.details],
      cause: err,
    });
  }
  return err;
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (unit tests)
  }
}

/**
 * Builds the model activities for a worker.
 *
 * `runModelTurn(input)` picks `adapters[input.model]` and calls `turn(input, signal)` with the
 * activity's cancellation signal, heartbeating meanwhile. Errors:
 * - unknown `input.model` → non-retryable `ApplicationFailure` of type `UNKNOWN_MODEL`
 *   (details: `{ model, known }`);
 * - adapter errors → see {@link toTurnFailure}.
 * Works outside an activity context too (no heartbeats, no cancellation), for tests.
 */
export function createModelActivities(options: ModelActivitiesOptions): ModelActivities {
  const adapters = new Map(Object.entries(options.adapters));
  return {
    async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const adapter = adapters.get(input.model);
      if (adapter === undefined) {
        throw ApplicationFailure.create({
          message: `UNKNOWN_MODEL: the worker has no model adapter ${JSON.stringify(input.model)} (known: ${[...adapters.keys()].join(', ') || 'none'})`,
          type: UNKNOWN_MODEL_FAILURE_TYPE,
          nonRetryable: true,
          details: [{ model: input.model, known: [...adapters.keys()] }],
        });
      }
      const ctx = activityContext();
      let timer: NodeJS.Timeout | undefined;
      if (ctx) {
        const timeout = ctx.info.heartbeatTimeoutMs;
        const every = options.heartbeatIntervalMs ?? (timeout ? Math.max(100, Math.floor(timeout / 3)) : 5_000);
        ctx.heartbeat({ turn: input.turn });
        timer = setInterval(() => ctx.heartbeat({ turn: input.turn }), every);
      }
      try {
        return await adapter.turn(input, ctx?.cancellationSignal);
      } catch (err) {
        throw toTurnFailure(err);
      } finally {
        if (timer !== undefined) clearInterval(timer);
      }
    },
  };
}
