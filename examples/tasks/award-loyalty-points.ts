import { defineTask } from 'taskworker';
import { sleep } from './_sleep';

/** Subscribes to orders.placed too, on its own queue: its retries and its archive are its own. */
export default defineTask({
  name: 'award-loyalty-points',
  queue: 'low_priority',
  timeLimitSeconds: 10,
  on: 'orders.placed',
  async run(payload: { order: string; cents: number }, ctx) {
    await sleep(30, ctx.signal);
    return { points: Math.floor(payload.cents / 100) };
  },
});
