import { defineTask } from 'taskworker';
import { sleep } from './_sleep';

/** Subscribes to orders.placed: the customer's confirmation email goes out first (high priority). */
export default defineTask({
  name: 'send-order-confirmation',
  queue: 'high_priority',
  timeLimitSeconds: 5,
  on: 'orders.placed',
  async run(payload: { order: string; email: string }, ctx) {
    await sleep(20, ctx.signal);
    return { confirmed: payload.order, event: ctx.event?.id };
  },
});
