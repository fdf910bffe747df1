import { defineTask } from 'taskworker';

class PaymentGatewayBusy extends Error {
  override name = 'PaymentGatewayBusy';
}

/** Flaky dependency: fails on its first two attempts, then succeeds (retried with backoff). */
export default defineTask({
  name: 'charge-card',
  queue: 'default',
  timeLimitSeconds: 10,
  maxRetries: 4,
  backoff: { baseSeconds: 1, capSeconds: 4 },
  async run(payload: { order: string; cents: number }, ctx) {
    if (ctx.attempt <= 2) throw new PaymentGatewayBusy(`gateway busy charging order ${payload.order} (attempt ${ctx.attempt})`);
  },
});
