import { defineTask } from 'taskworker';
import { sleep } from './_sleep';

/** Slow, low-priority housekeeping (100–300 ms). */
export default defineTask({
  name: 'rebuild-index',
  queue: 'low_priority',
  timeLimitSeconds: 30,
  async run(payload: { shard: number }, ctx) {
    await sleep(100 + (payload.shard % 3) * 100, ctx.signal);
  },
});
