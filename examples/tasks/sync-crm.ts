import { defineTask } from 'taskworker';

/** A dependency that is down for good: every attempt fails, so the job ends in the archive as exhausted. */
export default defineTask({
  name: 'sync-crm',
  queue: 'low_priority',
  timeLimitSeconds: 10,
  maxRetries: 2,
  backoff: { baseSeconds: 1, capSeconds: 2 },
  async run(payload: { account: string }) {
    throw new Error(`CRM refused account ${payload.account}: 503 Service Unavailable`);
  },
});
