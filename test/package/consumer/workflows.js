// A user's plain workflow module in a fresh project: it calls its own activity through
// proxyActivities, unaware of the fence, and imports the package's workflow-safe entry by name
// (the worker's bundler refuses a Node-only module reached from here). The plugin adds its
// workflow interceptor module when the worker bundles this file.
const { proxyActivities } = require('@temporalio/workflow');
const { NOTHING_APPLIED_CODES } = require('temporal-tool-checkpoint/workflow');

const { sendEmail } = proxyActivities({
  startToCloseTimeout: '30s',
  heartbeatTimeout: '3s',
  retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 10 },
});

// Re-exported so the bundle also holds the package's own agent workflow (a plugin cannot register workflows).
exports.agentWorkflow = require('temporal-tool-checkpoint/workflow').agentWorkflow;

exports.emailWorkflow = async function emailWorkflow(to) {
  return { email: await sendEmail(to), nothingAppliedCodes: NOTHING_APPLIED_CODES.length };
};
