/**
 * Recorded-model transcripts for the crash scenarios, built per repetition so that every run
 * asks for its own effects (unique titles and subjects; the provider is shared by all runs).
 * Anthropic Messages wire format: one turn with the tool_use blocks, then a final text turn.
 */

/** One tool call the scripted model asks for. */
export interface ScriptedCall {
  readonly id: string;
  readonly name: string;
  readonly input: Record<string, string>;
}

/** A ticket call (tool `create_ticket` unless named) with a title unique to `tag`. */
export function ticketCall(tag: string, n: number, name = 'create_ticket'): ScriptedCall {
  return { id: `toolu_${tag}_t${n}`, name, input: { title: `crash ${tag} ticket ${n}`, body: `Opened by the crash harness (${tag}, call ${n}).`, queue: n % 2 === 0 ? 'billing' : 'support' } };
}

/** A send_email call with a subject unique to `tag`. */
export function emailCall(tag: string, n: number): ScriptedCall {
  return { id: `toolu_${tag}_e${n}`, name: 'send_email', input: { to: 'jane@example.com', subject: `crash ${tag} email ${n}`, body: `Sent by the crash harness (${tag}, call ${n}).` } };
}

/** A transcript: one model turn asking for `calls` (in order), then the model ends its turn. */
export function transcriptFor(tag: string, calls: readonly ScriptedCall[]): unknown {
  const message = (n: number, content: unknown[], stop: string) => ({
    id: `msg_${tag}_${n}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 50 },
  });
  return {
    version: 1,
    id: `crash-${tag}`,
    format: 'anthropic-messages',
    description: `crash harness run ${tag}`,
    responses: [
      message(1, [{ type: 'text', text: 'Working on it.' }, ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input }))], 'tool_use'),
      message(2, [{ type: 'text', text: 'Done.' }], 'end_turn'),
    ],
  };
}
