/** A user's plain workflow: it calls its activity through `proxyActivities`, unaware of the fence. */
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities';

const { sendWelcomeEmail } = proxyActivities<Pick<typeof activities, 'sendWelcomeEmail'>>({ startToCloseTimeout: '1 minute' });

/** Signs a user up: one welcome email. */
export async function signupWorkflow(to: string): Promise<{ messageId: string }> {
  return sendWelcomeEmail(to);
}
