import { createHash } from 'node:crypto';
import { defineTask } from 'taskworker';

/** CPU-bound and short: hashing stands in for image work (~5 ms). */
export default defineTask({
  name: 'resize-image',
  queue: 'default',
  timeLimitSeconds: 10,
  async run(payload: { image: string; width: number }) {
    let digest = `${payload.image}:${payload.width}`;
    for (let i = 0; i < 5_000; i++) digest = createHash('sha256').update(digest).digest('hex');
    return digest;
  },
});
