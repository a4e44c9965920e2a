// A user's workflow module in a fresh project: it imports the package's workflow-safe entry by
// name (the worker's bundler refuses a Node-only module reached from here) and proxies the fenced
// tool activity. The second call repeats the first call's id: the fence delivers the stored result.
const { proxyActivities } = require('@temporalio/workflow');
const { NOTHING_APPLIED_CODES } = require('temporal-tool-checkpoint/workflow');

const { runFencedTool } = proxyActivities({ startToCloseTimeout: '1 minute' });

// Re-exported so the bundle also holds the package's own agent workflow (a plugin cannot register workflows).
exports.agentWorkflow = require('temporal-tool-checkpoint/workflow').agentWorkflow;

exports.consumerWorkflow = async function consumerWorkflow() {
  const info = require('@temporalio/workflow').workflowInfo();
  const call = { tenant: 'consumer', callId: 'call-1', runChainId: info.firstExecutionRunId, toolName: 'send_email', input: { to: 'a@example.com' } };
  const first = await runFencedTool(call);
  const again = await runFencedTool(call);
  return { first, again, nothingAppliedCodes: NOTHING_APPLIED_CODES.length };
};
