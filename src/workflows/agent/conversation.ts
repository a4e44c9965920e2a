/**
 * The conversation as the agent workflow holds it. Two modes:
 * - inline (runs started before patch `ttc-long-runs`): every message stays in workflow memory and each model
 *   turn's activity input carries the whole conversation, as before;
 * - by reference: the messages live in the run chain's conversation log in the side store; the
 *   workflow keeps only the messages not yet written there (`pending`: the last assistant turn
 *   and its tool results, with large outputs as `OutputRef`s) and how many are (`logged`), so a
 *   model turn's input, and the history it adds, stay bounded whatever the run's length.
 *   Runs with patch `ttc-conversation-branches` also keep `segments`: which run's log holds
 *   which of the `logged` messages, since each run writes to its own log (the log forks per
 *   run: a run reset to an earlier workflow task sees the conversation as it stood there, and the
 *   discarded branch's messages stay in the discarded run's log); older runs keep one log per
 *   run chain.
 *
 * Sizes are UTF-8 bytes of each message's JSON text, a tool output by reference counted at its
 * full size (`OutputRef.bytes`). Pure and sandbox-safe.
 */
import type { ConversationMessage, ConversationRef, ConversationSegment, LoggedMessage } from '../../model/types';
import type { ConversationState } from './types';

/** The conversation of one run: what the next model turn is given, and its size. */
export class Conversation {
  private logged: number;
  private pending: LoggedMessage[];
  private size: number;
  /** By reference with forking logs only: where the `logged` messages are (see `ConversationRef.segments`). */
  private readonly segments: ConversationSegment[] | undefined;

  /**
   * @param byReference whether the conversation lives in the side store (see the module comment)
   * @param state where a continued run's conversation stands; absent for a new conversation
   * @param forksOf by reference, when the log forks per run (patch `ttc-conversation-branches`):
   *   the run chain (`firstExecutionRunId`), whose log holds the messages of a handed-over state
   *   without segments (from a run before the patch), and `ownLog`, this run's id when it writes
   *   its own log (a reset run, and the runs continued from it); absent: one log per run chain.
   */
  constructor(
    readonly byReference: boolean,
    state?: ConversationState,
    private readonly forksOf?: { readonly runChainId: string; readonly ownLog?: string },
  ) {
    this.logged = state?.logged ?? 0;
    this.pending = [...(state?.pending ?? [])];
    this.size = state?.bytes ?? 0;
    if (byReference && forksOf !== undefined) {
      this.segments = [...(state?.segments ?? (this.logged > 0 ? [{ runId: forksOf.runChainId, until: this.logged }] : []))];
    }
  }

  /** Messages in the conversation. */
  get messages(): number {
    return this.logged + this.pending.length;
  }

  /** UTF-8 bytes of the conversation (see the module comment). */
  get bytes(): number {
    return this.size;
  }

  /** Appends a message. */
  add(message: LoggedMessage): void {
    this.pending.push(message);
    this.size += messageBytes(message);
  }

  /**
   * What the model-turn activity is given: `{ messages }` inline, or `{ conversation }` by
   * reference (the pending messages to write after the `logged` ones, and where those are when
   * the log forks per run, with `marks`: what the run tells the activity about its segment).
   */
  turnInput(
    runChainId: string,
    marks: Pick<ConversationRef, 'startsSegment' | 'refusedIfStarted'> = {},
  ): { readonly messages: ConversationMessage[] } | { readonly conversation: ConversationRef } {
    if (!this.byReference) return { messages: this.pending as ConversationMessage[] };
    if (this.segments === undefined) return { conversation: { runChainId, logged: this.logged, append: [...this.pending] } };
    // A reset run (and its lineage) writes beside the branch it discards; any other run goes on in the log its conversation is in.
    const writeTo = this.forksOf?.ownLog ?? this.segments.at(-1)?.runId ?? runChainId;
    return { conversation: { runChainId, logged: this.logged, append: [...this.pending], segments: [...this.segments], writeTo, ...marks } };
  }

  /**
   * Records that a model turn succeeded: by reference, the pending messages are now in the log.
   * When the log forks per run they are in the log of `writtenBy` (the turn result's
   * `conversationRunId`; absent: an activity that knew no segments wrote them to the chain's
   * log): the last segment grows when it is that run's, else a new one starts.
   */
  turnTaken(writtenBy?: string): void {
    if (!this.byReference) return;
    const until = this.logged + this.pending.length;
    if (this.segments !== undefined && this.forksOf !== undefined && until > this.logged) {
      const runId = writtenBy ?? this.forksOf.runChainId;
      const last = this.segments.at(-1);
      if (last?.runId === runId) this.segments[this.segments.length - 1] = { runId, until };
      else this.segments.push({ runId, until });
    }
    this.logged = until;
    this.pending = [];
  }

  /** What a continued run starts from. */
  state(): ConversationState {
    const segments = this.segments === undefined ? {} : { segments: [...this.segments] };
    return { logged: this.logged, pending: [...this.pending], bytes: this.size, ...segments };
  }
}

/** UTF-8 bytes of a message's JSON text; a `contentRef` counts as the output it stands for. */
export function messageBytes(message: LoggedMessage): number {
  const own = utf8Length(JSON.stringify(message));
  return 'contentRef' in message ? own + message.contentRef.bytes : own;
}

/** UTF-8 length of a string in bytes (a lone surrogate counts as U+FFFD: 3 bytes). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}
