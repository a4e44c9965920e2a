/**
 * The model-turn activity: one call to a model adapter, so the model's decision lands in
 * workflow history before any tool runs (docs/protocol.md#agent-workflow).
 */
import { Context } from '@temporalio/activity';
import { CheckpointError } from '../../checkpoint/errors';
import type { ModelAdapter } from '../../model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../model/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import { activityConversationLogs, type ExplicitLogScope } from './conversation-log';
import { toApplicationFailure } from '../fence/failures';
import { assertOfferedToolsPinned, assertTenantPinned, resolvePins } from '../fence/pins';
import { ConversationCache, DEFAULT_CONVERSATION_CACHE_BYTES } from './conversation-cache';
import { loadConversation, writerOf } from './turn-conversation';
import { checkChainSegments } from './chain-segments';
import { MAX_TIMER_MS } from '../tools/long-timer';

/** Options of {@link createModelActivities}. */
export interface ModelActivitiesOptions {
  /** Adapter registry; `ModelTurnInput.model` selects one by key. */
  readonly adapters: Readonly<Record<string, ModelAdapter>>;
  /**
   * How often the activity heartbeats while the model answers, so cancellation reaches it and
   * a heartbeat timeout can be set. @default a third of the heartbeat timeout, else 5000 ms
   */
  readonly heartbeatIntervalMs?: number;
  /** Tenants this worker serves: a turn for another tenant (or naming none) is refused with NOT_PINNED before the model is called. @default any */
  readonly pinnedTenants?: readonly string[];
  /** Tools this worker serves: a turn offering another tool is refused with NOT_PINNED before the model is called. @default any */
  readonly pinnedTools?: readonly string[];
  /**
   * The side store holding the run chains' conversation logs (claim check): required for a turn
   * whose input gives `conversation` instead of `messages` (the tool activities' store, so outputs
   * they deliver by reference are found). @default none: such turns fail INVALID_CONFIG
   */
  readonly store?: CheckpointStore;
  /**
   * Bytes of conversations this worker keeps in memory between turns, so a turn reads only the
   * messages added since the last one (see `ConversationCache`); 0 reads the whole log every
   * turn. @default 67,108,864 (64 MiB)
   */
  readonly conversationCacheBytes?: number;
  /**
   * Tests only: the namespace, workflow id and run id conversation logs are named with when
   * `runModelTurn` is called outside an activity context. Inside one, the context's are used.
   */
  readonly outsideActivity?: ExplicitLogScope;
}

/** The activities object for `Worker.create({ activities })`. */
export interface ModelActivities {
  runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult>;
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
 * - a pinned worker (`pinnedTenants`, `pinnedTools`) refuses a turn for another tenant or
 *   offering another tool → non-retryable `NOT_PINNED`; the model is not called;
 * - unknown `input.model` → non-retryable `ApplicationFailure` of type `UNKNOWN_MODEL`
 *   (details: `{ model, known }`): models are pinned by registration;
 * - adapter errors → `toApplicationFailure` (`../fence/failures`): a `CheckpointError` becomes an
 *   `ApplicationFailure` typed by its code, retryability from the code table, `nextRetryDelay`
 *   from `details.retryAfterMs` (MODEL_TRANSIENT with Retry-After); cancellation
 *   (`CancelledFailure`, the signal's reason) passes through; anything else is `UNEXPECTED`.
 * - exactly one of `input.messages` and `input.conversation` must be given → else non-retryable
 *   INVALID_ARGUMENT (`details.field` `conversation`); the model is not called;
 * - `input.conversation` (claim check): the activity writes `append` to the conversation log
 *   of run `writeTo` (else its own run; the run chain's log when the input gives no `segments`), reads the whole
 *   conversation back and resolves every output by reference (see `loadConversation`), and the
 *   adapter receives `{ ...input, messages, conversation: undefined }`; with `segments`, the
 *   result names that run (`conversationRunId`). The logs are named from
 *   the activity context's namespace, workflow id and run id, the input's `tenant` (required
 *   here: INVALID_ARGUMENT) and `conversation.runChainId`. Without
 *   `options.store` → non-retryable INVALID_CONFIG. Store errors map through
 *   `toApplicationFailure`: STORE_UNAVAILABLE is retryable, CONVERSATION_CONFLICT and
 *   CONVERSATION_ENTRY_MISSING are not. A reset run of a run that had continued as new is refused
 *   before the model is called (non-retryable RESET_OF_CONTINUED_RUN: `checkChainSegments`). The whole log is read each turn (memory and time
 *   proportional to the conversation, which is sent to the model anyway).
 * Works outside an activity context too (no heartbeats, no cancellation), for tests.
 */
export function createModelActivities(options: ModelActivitiesOptions): ModelActivities {
  const adapters = new Map(Object.entries(options.adapters));
  const pins = resolvePins({ pinnedTenants: options.pinnedTenants, pinnedTools: options.pinnedTools }, options.pinnedTools ?? []);
  const cacheBytes = options.conversationCacheBytes ?? DEFAULT_CONVERSATION_CACHE_BYTES;
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `conversationCacheBytes must be a non-negative integer (bytes), got ${String(cacheBytes)}`, { field: 'conversationCacheBytes' });
  }
  const cache = new ConversationCache(cacheBytes);
  return {
    async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
      try {
        assertTenantPinned(pins, input?.tenant);
        assertOfferedToolsPinned(pins, input?.tools);
      } catch (error) {
        throw toApplicationFailure(error);
      }
      const adapter = adapters.get(input.model);
      if (adapter === undefined) {
        throw toApplicationFailure(
          new CheckpointError('UNKNOWN_MODEL', `the worker has no model adapter ${JSON.stringify(input.model)} (known: ${[...adapters.keys()].join(', ') || 'none'})`, {
            model: input.model,
            known: [...adapters.keys()],
          }),
        );
      }
      const ctx = activityContext();
      let timer: NodeJS.Timeout | undefined;
      if (ctx) {
        const timeout = ctx.info.heartbeatTimeoutMs;
        const every = Math.min(MAX_TIMER_MS, options.heartbeatIntervalMs ?? (timeout ? Math.max(100, Math.floor(timeout / 3)) : 5_000));
        ctx.heartbeat({ turn: input.turn });
        timer = setInterval(() => ctx.heartbeat({ turn: input.turn }), every);
      }
      try {
        const { input: turnInput, conversationRunId } = await withMessages(options, input, cache);
        const result = await adapter.turn(turnInput, ctx?.cancellationSignal);
        return conversationRunId === undefined ? result : { ...result, conversationRunId };
      } catch (err) {
        throw toApplicationFailure(err);
      } finally {
        if (timer !== undefined) clearInterval(timer);
      }
    },
  };
}

/**
 * `input` with its conversation as `messages`: as given, or read by reference from the store;
 * with `conversationRunId`, the run whose log the appended messages went to (a conversation with
 * segments only).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (both or neither of messages and conversation;
 *   no tenant), INVALID_CONFIG (no store), and the errors of `checkChainSegments` (RESET_OF_CONTINUED_RUN)
 *   and `loadConversation`.
 */
async function withMessages(
  options: ModelActivitiesOptions,
  input: ModelTurnInput,
  cache: ConversationCache,
): Promise<{ readonly input: ModelTurnInput; readonly conversationRunId?: string }> {
  const hasMessages = input.messages !== undefined;
  const hasConversation = input.conversation !== undefined;
  if (hasMessages === hasConversation) {
    throw new CheckpointError('INVALID_ARGUMENT', `a model turn takes exactly one of messages and conversation, got ${hasMessages ? 'both' : 'neither'}`, {
      field: 'conversation',
    });
  }
  if (!hasConversation) return { input };
  if (options.store === undefined) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      'this turn gives its conversation by reference, but the worker built createModelActivities without a store; pass the checkpoint store',
      { field: 'store' },
    );
  }
  if (typeof input.tenant !== 'string' || input.tenant.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'a turn with its conversation by reference needs its tenant (it names the conversation log)', { field: 'tenant' });
  }
  const logs = activityConversationLogs(input.tenant, input.conversation!.runChainId, options.outsideActivity);
  await checkChainSegments(options.store, logs, input.conversation!);
  const messages = await loadConversation(options.store, logs, input.conversation!, cache);
  return {
    input: { ...input, messages, conversation: undefined },
    ...(input.conversation!.segments !== undefined ? { conversationRunId: writerOf(logs, input.conversation!) } : {}),
  };
}
