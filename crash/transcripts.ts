/**
 * Recorded-model transcripts for the crash scenarios, built per repetition so that every run
 * asks for its own effects (unique titles and subjects; the provider is shared by all runs).
 * Anthropic Messages wire format: one turn with the tool_use blocks, then a final text turn.
 */

/** One tool call the scripted model asks for. */
export interface ScriptedCall {
  readonly id: string;
  readonly name: string;
  /** What the model sends (JSON). The ticket and email calls' fields are strings. */
  readonly input: Readonly<Record<string, string | number | readonly string[]>>;
}

/** A ticket call (tool `create_ticket` unless named) with a title unique to `tag`. */
export function ticketCall(tag: string, n: number, name = 'create_ticket'): ScriptedCall {
  return {
    id: `toolu_${tag}_t${n}`,
    name,
    input: { title: `crash ${tag} ticket ${n}`, body: `Opened by the crash harness (${tag}, call ${n}).`, queue: n % 2 === 0 ? 'billing' : 'support' },
  };
}

/** A send_email call with a subject unique to `tag`. */
export function emailCall(tag: string, n: number): ScriptedCall {
  return {
    id: `toolu_${tag}_e${n}`,
    name: 'send_email',
    input: { to: 'jane@example.com', subject: `crash ${tag} email ${n}`, body: `Sent by the crash harness (${tag}, call ${n}).` },
  };
}

/** The recipients of a notification batch of `tag`: `<tag>-r001` … (unique to the repetition; the provider lists them by the prefix `<tag>-r`). */
export function batchRecipients(tag: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${tag}-r${String(i + 1).padStart(3, '0')}`);
}

/** A call of a notification batch tool (`send_notifications`, `…_by_key`, `…_plain`) sending to `count` recipients of `tag`. */
export function notificationsCall(tag: string, toolName: string, count: number): ScriptedCall {
  return { id: `toolu_${tag}_n1`, name: toolName, input: { recipients: batchRecipients(tag, count), message: `Your order ships soon (crash harness ${tag}).` } };
}

/** The order of `tag`: reserve → charge → ship (to `destination`; `Atlantis` is refused), paid with `card` (`card_norefund` cannot be refunded). */
export function orderCalls(tag: string, options: { destination?: string; card?: string } = {}): ScriptedCall[] {
  const orderId = `order-${tag}`;
  return [
    { id: `toolu_${tag}_o1`, name: 'reserve_inventory', input: { orderId, sku: 'SKU-42', quantity: 2 } },
    { id: `toolu_${tag}_o2`, name: 'charge_payment', input: { orderId, amountCents: 4_200, card: options.card ?? 'card_visa' } },
    { id: `toolu_${tag}_o3`, name: 'create_shipment', input: { orderId, destination: options.destination ?? 'Oslo' } },
  ];
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
