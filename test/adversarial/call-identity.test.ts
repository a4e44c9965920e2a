/**
 * Adversarial regression (docs/protocol.md#call-identity): the parts of a call's identity (tenant,
 * run chain, workflow id, call id) are encoded so that no two different calls share a checkpoint,
 * whatever characters the parts contain: each call below gets its own checkpoint and its own
 * effect.
 */
import { Harness, Provider, ticketTool, typeOf, type Outcome } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

const keyOf = (o: Outcome): string | undefined => ('result' in o ? o.result.idempotencyKey : undefined);

describe('call identity', () => {
  test.each([
    ['a/b', 'c', 'a', 'b/c'],
    ['a"', 'b', 'a', '"b'],
    ['a","b', 'c', 'a', 'b","c'],
    ['é', 'x', 'e\u0301', 'x'],
    ['a\\', 'b', 'a', '\\b'],
  ])('workflow %j call %j vs workflow %j call %j: two checkpoints, both run', async (w1, c1, w2, c2) => {
    const provider = new Provider();
    const acts = h.activities([ticketTool(provider)]);
    const run = `chain-${Math.random()}`; // a fresh run chain per case, so the workflow ids are exactly the ones named
    const one = { workflowId: w1, runId: run, input: { tenant: 'acme', callId: c1, runChainId: run, toolName: 'create_ticket', input: { title: 'x' } } };
    const two = { workflowId: w2, runId: run, input: { tenant: 'acme', callId: c2, runChainId: run, toolName: 'create_ticket', input: { title: 'x' } } };
    const first = await h.run(acts, one, 1);
    const second = await h.run(acts, two, 1);
    expect([typeOf(first), typeOf(second)]).toEqual(['result:executed', 'result:executed']);
    expect(keyOf(first)).not.toBe(keyOf(second));
    expect(provider.total()).toBe(2);
  });

  test('tenant "a/b" workflow "w" vs tenant "a" workflow "b/w", same run chain and call: two checkpoints, both run', async () => {
    const provider = new Provider();
    const acts = h.activities([ticketTool(provider)]);
    const run = `chain-${Math.random()}`;
    const one = { workflowId: 'w', runId: run, input: { tenant: 'a/b', callId: 'x', runChainId: run, toolName: 'create_ticket', input: { title: 'x' } } };
    const two = { workflowId: 'b/w', runId: run, input: { tenant: 'a', callId: 'x', runChainId: run, toolName: 'create_ticket', input: { title: 'x' } } };
    const first = await h.run(acts, one, 1);
    const second = await h.run(acts, two, 1);
    expect([typeOf(first), typeOf(second)]).toEqual(['result:executed', 'result:executed']);
    expect(keyOf(first)).not.toBe(keyOf(second));
    expect(provider.total()).toBe(2);
  });
});
