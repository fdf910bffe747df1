import { VirtualClock } from '../../lib/clock';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { queueClientConformance } from '../conformance/queue-client';

const clock = new VirtualClock();
const service = new MemoryQueueService(clock);

queueClientConformance(
  'in-memory fake',
  async () => ({
    client: service,
    createQueue: async (name, options = {}) =>
      service.createQueue(name, {
        ...(options.visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds } : {}),
        ...(options.deadLetter
          ? {
              redrive: { deadLetterUrl: `memory://queues/${options.deadLetter.name}`, maxReceiveCount: options.deadLetter.maxReceiveCount },
            }
          : {}),
      }),
    wait: async (ms) => clock.advance(ms),
  }),
  async () => {},
);
