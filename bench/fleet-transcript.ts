/** The transcript of bench:fleet and bench:profile: one scripted turn calling the 3 fleet tools, then the final answer. */
import { FLEET_TOOL_NAMES } from './fleet-tools';

/** An OpenAI Chat Completions transcript: one turn calling the 3 tools (run concurrently by the agent), then the final answer. */
export function fleetTranscript(): unknown {
  const args: Record<(typeof FLEET_TOOL_NAMES)[number], unknown> = {
    lookup_order: { orderId: 'O-1001' },
    create_ticket: { title: 'Order O-1001 arrived damaged', queue: 'support' },
    notify_customer: { to: 'customer@example.com', text: 'We opened a ticket for your order.' },
  };
  const calls = FLEET_TOOL_NAMES.map((name, i) => ({ id: `call_${i}_${name}`, type: 'function', function: { name, arguments: JSON.stringify(args[name]) } }));
  return {
    version: 1,
    id: 'fleet',
    format: 'openai-chat-completions',
    responses: [
      { object: 'chat.completion', choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: calls } }] },
      { object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Ticket opened and customer notified.' } }] },
    ],
  };
}
