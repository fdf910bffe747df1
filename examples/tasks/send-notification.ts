import { defineTask } from 'taskworker';
import { sleep } from './_sleep';

/** I/O-bound and urgent: a push notification (simulated by a 10–40 ms wait). */
export default defineTask({
  name: 'send-notification',
  queue: 'high_priority',
  timeLimitSeconds: 5,
  validate(payload) {
    const p = payload as { user?: unknown; text?: unknown };
    if (typeof p?.user !== 'string' || typeof p.text !== 'string') throw new TypeError('expected { user: string, text: string }');
    return { user: p.user, text: p.text };
  },
  async run(_payload, ctx) {
    await sleep(10 + (ctx.jobId.charCodeAt(0) % 30), ctx.signal);
  },
});
