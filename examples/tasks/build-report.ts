import { defineTask } from 'taskworker';

/**
 * A runaway: a CPU-bound loop that never yields, so its AbortSignal cannot help. Its thread is
 * terminated at the time limit and the job is archived as timed-out.
 */
export default defineTask({
  name: 'build-report',
  queue: 'low_priority',
  timeLimitSeconds: 2,
  maxRetries: 0,
  run(payload: { rows: number }) {
    let total = 0;
    for (let i = 0; i < payload.rows; i++) total += Math.sqrt(i);
    return total;
  },
});
