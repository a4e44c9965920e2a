/**
 * The workflow's Conversation when its log forks per run (patch `ttc-conversation-branches`): it
 * keeps which run's log holds which logged messages (`segments`), from the run each model turn's
 * activity says it wrote to, across turns and across a continue-as-new handover; older runs and
 * handovers keep one log per chain.
 */
import type { LoggedMessage } from '../../../src/model/types';
import { Conversation } from '../../../src/workflows/agent/conversation';

const CHAIN = { runChainId: 'run-a' };
const user = (text: string): LoggedMessage => ({ role: 'user', text });
const said = (text: string): LoggedMessage => ({ role: 'assistant', text, toolCalls: [] });

describe('Conversation segments', () => {
  test('a new conversation has none; each turn attributes its messages to the run that wrote them', () => {
    const conversation = new Conversation(true, undefined, CHAIN);
    conversation.add(user('p'));
    // A run that is not a reset run writes where its conversation is: the chain's log for a new one.
    expect(conversation.turnInput('run-a')).toEqual({ conversation: { runChainId: 'run-a', logged: 0, append: [user('p')], segments: [], writeTo: 'run-a' } });
    conversation.turnTaken('run-a');
    conversation.add(said('a1'));
    conversation.add(user('a2'));
    conversation.turnTaken('run-a'); // the same run: its segment grows
    expect(conversation.state().segments).toEqual([{ runId: 'run-a', until: 3 }]);
    conversation.add(said('b3'));
    conversation.turnTaken('run-b'); // a turn taken after a reset to here: the reset run's log
    conversation.turnTaken('run-c'); // nothing pending: no empty segment
    conversation.add(said('x'));
    expect(conversation.turnInput('run-a')).toEqual({
      conversation: {
        runChainId: 'run-a',
        logged: 4,
        append: [said('x')],
        segments: [
          { runId: 'run-a', until: 3 },
          { runId: 'run-b', until: 4 },
        ],
        writeTo: 'run-b',
      },
    });
  });

  test("a reset run writes to its own run's log; a run continued from it goes on in that log", () => {
    const reset = new Conversation(true, { logged: 3, pending: [], bytes: 0, segments: [{ runId: 'run-a', until: 3 }] }, { runChainId: 'run-a', ownLog: 'run-r' });
    reset.add(said('r3'));
    expect(reset.turnInput('run-a')).toEqual({ conversation: expect.objectContaining({ writeTo: 'run-r' }) });
    reset.turnTaken('run-r');
    const continued = new Conversation(true, reset.state(), CHAIN);
    continued.add(said('c4'));
    expect(continued.turnInput('run-a')).toEqual({
      conversation: expect.objectContaining({
        writeTo: 'run-r',
        segments: [
          { runId: 'run-a', until: 3 },
          { runId: 'run-r', until: 4 },
        ],
      }),
    });
    continued.turnTaken('run-r');
    // Continue-as-new adds no segment: what is in history per turn stays flat along the chain.
    expect(continued.state().segments).toEqual([
      { runId: 'run-a', until: 3 },
      { runId: 'run-r', until: 5 },
    ]);
  });

  test('a turn whose activity names no run (a worker that knew no segments) wrote to the chain log', () => {
    const conversation = new Conversation(true, { logged: 2, pending: [said('b2')], bytes: 10, segments: [{ runId: 'run-b', until: 2 }] }, CHAIN);
    conversation.turnTaken(undefined);
    expect(conversation.state().segments).toEqual([
      { runId: 'run-b', until: 2 },
      { runId: 'run-a', until: 3 },
    ]);
  });

  test('the segments survive a continue-as-new handover, and the continued run adds its own', () => {
    const first = new Conversation(true, undefined, CHAIN);
    first.add(user('p'));
    first.turnTaken('run-a');
    first.add(said('a1'));
    const handover = first.state();
    expect(handover).toEqual({ logged: 1, pending: [said('a1')], bytes: first.bytes, segments: [{ runId: 'run-a', until: 1 }] });
    const next = new Conversation(true, JSON.parse(JSON.stringify(handover)), CHAIN);
    next.turnTaken('run-a2');
    expect(next.state().segments).toEqual([
      { runId: 'run-a', until: 1 },
      { runId: 'run-a2', until: 2 },
    ]);
    // The handover is a copy: the next run's turns never change it.
    expect(handover.segments).toEqual([{ runId: 'run-a', until: 1 }]);
  });

  test("a handover without segments (a run before the patch) has its logged messages in the chain's log", () => {
    const legacy = new Conversation(true, { logged: 5, pending: [user('q')], bytes: 50 }, CHAIN);
    expect(legacy.turnInput('run-a')).toMatchObject({ conversation: { logged: 5, segments: [{ runId: 'run-a', until: 5 }] } });
    const empty = new Conversation(true, { logged: 0, pending: [user('q')], bytes: 5 }, CHAIN);
    expect(empty.turnInput('run-a')).toMatchObject({ conversation: { segments: [] } });
  });

  test('runs without the patch, and inline conversations, keep no segments', () => {
    const chainLog = new Conversation(true, { logged: 2, pending: [], bytes: 20 });
    chainLog.add(user('q'));
    expect(chainLog.turnInput('run-a')).toEqual({ conversation: { runChainId: 'run-a', logged: 2, append: [user('q')] } });
    chainLog.turnTaken('run-b');
    expect(chainLog.state()).toEqual({ logged: 3, pending: [], bytes: chainLog.bytes });
    const inline = new Conversation(false, undefined, CHAIN);
    inline.add(user('p'));
    expect(inline.turnInput('run-a')).toEqual({ messages: [user('p')] });
    expect(inline.state()).not.toHaveProperty('segments');
  });
});
