/**
 * The conversation as the agent workflow holds it. Two modes:
 * - inline (runs started before patch `ttc-long-runs`): every message stays in workflow memory and each model
 *   turn's activity input carries the whole conversation, as before;
 * - by reference: the messages live in the run chain's conversation log in the side store; the
 *   workflow keeps only the messages not yet written there (`pending`: the last assistant turn
 *   and its tool results, with large outputs as `OutputRef`s) and how many are (`logged`), so a
 *   model turn's input, and the history it adds, stay bounded whatever the run's length.
 *
 * Sizes are UTF-8 bytes of each message's JSON text, a tool output by reference counted at its
 * full size (`OutputRef.bytes`). Pure and sandbox-safe.
 */
import type { ConversationMessage, ConversationRef, LoggedMessage } from '../../model/types';
import type { ConversationState } from './types';

/** The conversation of one run: what the next model turn is given, and its size. */
export class Conversation {
  private logged: number;
  private pending: LoggedMessage[];
  private size: number;

  /**
   * @param byReference whether the conversation lives in the side store (see the module comment)
   * @param state where a continued run's conversation stands; absent for a new conversation
   */
  constructor(
    readonly byReference: boolean,
    state?: ConversationState,
  ) {
    this.logged = state?.logged ?? 0;
    this.pending = [...(state?.pending ?? [])];
    this.size = state?.bytes ?? 0;
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
   * reference (the pending messages to write after the `logged` ones).
   */
  turnInput(runChainId: string): { readonly messages: ConversationMessage[] } | { readonly conversation: ConversationRef } {
    if (!this.byReference) return { messages: this.pending as ConversationMessage[] };
    return { conversation: { runChainId, logged: this.logged, append: [...this.pending] } };
  }

  /** Records that a model turn succeeded: by reference, the pending messages are now in the log. */
  turnTaken(): void {
    if (!this.byReference) return;
    this.logged += this.pending.length;
    this.pending = [];
  }

  /** What a continued run starts from. */
  state(): ConversationState {
    return { logged: this.logged, pending: [...this.pending], bytes: this.size };
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
