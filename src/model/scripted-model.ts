/**
 * A model adapter that replays recorded transcripts (see `transcript.ts`): turn `n` returns the
 * transcript's response `n`, always the same one, so a retried turn activity gets an identical
 * result. It keeps no cursor and no per-turn state: memory does not grow with the turns it serves
 *, unless a test opts in with `recordRequests`.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { ModelAdapter } from './model-adapter';
import { parseTranscript, type Transcript } from './transcript';
import type { ModelTurnInput, ModelTurnResult } from './types';

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /** Registry name matched against `ModelTurnInput.model`. @default 'scripted' */
  readonly name?: string;
  /** Transcripts this model can replay, selected by id (see {@link ScriptedModelOptions}). */
  readonly transcripts: Transcript | readonly Transcript[];
  /**
   * Accept a whole transcript file inline as `modelOptions.transcript` (an object), so a client
   * can start a run from a file the workers do not have. @default true
   */
  readonly allowInline?: boolean;
  /**
   * Check, for turn n > 0, that the conversation holds a `tool` message for every tool call of
   * response n − 1; a missing one (or an absent `messages`) throws `INVALID_ARGUMENT`. Catches
   * agent-loop bugs. @default false
   */
  readonly checkToolResults?: boolean;
  /**
   * Tests only: keep a deep copy of every request (see {@link ScriptedModel.requests}). Each copy
   * holds the whole conversation so far, so memory grows with every turn served: never turn this
   * on in a worker. @default false
   */
  readonly recordRequests?: boolean;
}

/** One request the scripted model received (a retried turn appears once per attempt); kept only with `recordRequests`. */
export interface ScriptedRequest {
  /** Id of the transcript that answered. */
  readonly transcript: string;
  readonly turn: number;
  /** A deep copy of the input as received. */
  readonly input: ModelTurnInput;
}

/**
 * Replays transcripts. `ModelTurnInput.modelOptions` selects one:
 * - `{ "transcript": "<id>" }` — a transcript registered at construction;
 * - `{ "transcript": { …transcript file… } }` — inline (unless `allowInline: false`);
 * - omitted — allowed when exactly one transcript is registered.
 *
 * The transcript decides the stop reason and `droppedToolCalls` of each turn (`max_tokens`,
 * `refusal`, `pause_turn` scripted in the provider's wire terms: see `response-conversion.ts`). A
 * transcript's invalid turn is refused when it is parsed, as INVALID_TRANSCRIPT (not retryable),
 * never at turn time. `input.messages` is read only by `checkToolResults`.
 *
 * Errors: `CheckpointError` SCRIPT_EXHAUSTED (details `transcript`, `turn`, `responses`) when the
 * turn is past the end of the transcript; INVALID_MODEL_OPTIONS for a bad or unknown selection;
 * INVALID_TRANSCRIPT for a malformed inline transcript. An aborted `signal` rejects with its reason.
 */
export class ScriptedModel implements ModelAdapter {
  readonly name: string;
  private readonly byId = new Map<string, Transcript>();
  private readonly allowInline: boolean;
  private readonly checkToolResults: boolean;
  /** Null unless `recordRequests` (tests): the only state that could grow with the turns served. */
  private readonly log: ScriptedRequest[] | null;

  constructor(options: ScriptedModelOptions) {
    this.name = options.name ?? 'scripted';
    this.allowInline = options.allowInline ?? true;
    this.checkToolResults = options.checkToolResults ?? false;
    this.log = options.recordRequests === true ? [] : null;
    const list: readonly Transcript[] = Array.isArray(options.transcripts) ? (options.transcripts as readonly Transcript[]) : [options.transcripts as Transcript];
    for (const transcript of list) {
      if (this.byId.has(transcript.id)) {
        throw new CheckpointError('INVALID_MODEL_OPTIONS', `two transcripts have the id ${transcript.id}`, { transcript: transcript.id });
      }
      this.byId.set(transcript.id, transcript);
    }
  }

  /**
   * Every request received so far, in order (including retried turns).
   *
   * @throws {@link CheckpointError} INVALID_ARGUMENT unless the model was built with `recordRequests: true`.
   */
  get requests(): readonly ScriptedRequest[] {
    if (this.log === null) {
      throw new CheckpointError('INVALID_ARGUMENT', `scripted model ${this.name} keeps no requests; construct it with recordRequests: true (tests only)`, {
        field: 'recordRequests',
      });
    }
    return this.log;
  }

  /** The registered transcript ids. */
  get transcriptIds(): readonly string[] {
    return [...this.byId.keys()];
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnResult> {
    if (signal?.aborted) throw signal.reason;
    const { turn } = input;
    if (!Number.isSafeInteger(turn) || turn < 0) {
      throw new CheckpointError('INVALID_ARGUMENT', `turn must be a non-negative integer, got ${String(turn)}`, { field: 'turn' });
    }
    const transcript = this.select(input.modelOptions);
    this.log?.push({ transcript: transcript.id, turn, input: structuredClone(input) });
    const result = transcript.turns[turn];
    if (result === undefined) {
      throw new CheckpointError(
        'SCRIPT_EXHAUSTED',
        `transcript ${JSON.stringify(transcript.source)} has ${transcript.turns.length} responses; turn ${turn} asked for response ${turn} ` +
          `(the agent called the model again after the script ended)`,
        { transcript: transcript.id, source: transcript.source, turn, responses: transcript.turns.length },
      );
    }
    if (this.checkToolResults && turn > 0) this.assertToolResults(transcript, input);
    return result;
  }

  private select(modelOptions: JsonValue | undefined): Transcript {
    const selector =
      modelOptions !== undefined && modelOptions !== null && typeof modelOptions === 'object' && !Array.isArray(modelOptions) ? modelOptions['transcript'] : undefined;
    if (modelOptions !== undefined && modelOptions !== null && selector === undefined) {
      throw new CheckpointError('INVALID_MODEL_OPTIONS', `scripted model options must be { "transcript": <id or transcript> }`, {});
    }
    if (selector === undefined) {
      if (this.byId.size === 1) return [...this.byId.values()][0]!;
      throw new CheckpointError('INVALID_MODEL_OPTIONS', `scripted model ${this.name} has ${this.byId.size} transcripts; modelOptions.transcript must name one`, {
        transcripts: this.transcriptIds.join(','),
      });
    }
    if (typeof selector === 'string') {
      const found = this.byId.get(selector);
      if (found === undefined) {
        throw new CheckpointError('INVALID_MODEL_OPTIONS', `scripted model ${this.name} has no transcript ${JSON.stringify(selector)}`, {
          transcript: selector,
          known: this.transcriptIds.join(','),
        });
      }
      return found;
    }
    if (this.allowInline && typeof selector === 'object' && selector !== null && !Array.isArray(selector)) {
      return parseTranscript(selector);
    }
    throw new CheckpointError('INVALID_MODEL_OPTIONS', `modelOptions.transcript must be a transcript id${this.allowInline ? ' or an inline transcript' : ''}`, {});
  }

  private assertToolResults(transcript: Transcript, input: ModelTurnInput): void {
    if (input.messages === undefined) {
      throw new CheckpointError('INVALID_ARGUMENT', `checkToolResults needs the resolved conversation in messages (turn ${input.turn})`, { field: 'messages' });
    }
    const answered = new Set(input.messages.flatMap((m) => (m.role === 'tool' ? [m.callId] : [])));
    for (const call of transcript.turns[input.turn - 1]?.toolCalls ?? []) {
      if (!answered.has(call.callId)) {
        throw new CheckpointError(
          'INVALID_ARGUMENT',
          `turn ${input.turn} of transcript ${JSON.stringify(transcript.source)} has no tool result for call ${call.callId} (${call.toolName})`,
          { field: 'messages', callId: call.callId },
        );
      }
    }
  }
}
