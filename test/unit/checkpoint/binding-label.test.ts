import { bindingLabel } from '../../../src/checkpoint/binding-label';
import { callBindingId } from '../../../src/checkpoint/call-identity';
import { itemBinding } from '../../../src/checkpoint/batch-identity';
import { compensationBindingCallId } from '../../../src/activities/fence/compensation-call';

describe('bindingLabel: what `ttc pending` shows for a stored checkpoint', () => {
  const call = callBindingId({ runChainId: 'run-1', workflowId: 'order-7', callId: 'toolu_1' });
  const binding = { namespace: 'default/acme', callId: call, toolName: 'send_notifications', toolRevision: 'v1', inputFingerprint: `sha256:${'0'.repeat(64)}` };

  test('a call, a batch item and a compensation are named by workflow and call id', () => {
    expect(bindingLabel(call)).toBe('order-7/toolu_1');
    expect(bindingLabel(itemBinding(binding, 'user-20', 2, { to: 'user-20' }).callId)).toBe('order-7/toolu_1 item "user-20" (generation 2)');
    expect(bindingLabel(compensationBindingCallId(call, 1))).toBe('order-7/toolu_1 compensation (generation 1)');
  });

  test('any other text is shown as it is', () => {
    expect(bindingLabel('act-3')).toBe('act-3');
    expect(bindingLabel('["ttc/item/1"')).toBe('["ttc/item/1"');
  });
});
