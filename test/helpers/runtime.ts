import { type Clock, systemClock } from '../../lib/clock';
import type { TaskworkerConfig } from '../../lib/config/app-config';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { DispatcherRuntime, type DispatcherRuntimeOptions } from '../../lib/invocation/dispatcher-runtime';
import { silentLogger } from '../../lib/ports';
import { seededRandom } from '../../lib/random';
import { InlineExecutor } from '../../lib/run/inline-executor';
import type { BatchReport } from '../../lib/settle/report';
import { createRegistry } from '../../lib/tasks/registry';
import type { TaskDefinition } from '../../lib/tasks/task';

/**
 * A DispatcherRuntime on fakes: one in-memory `urgent` queue (visibility 30 s) and an archive,
 * tasks run inline, every settled batch kept in `reports`, the memory guard reading 0 unless `more`
 * gives it a reading. `more` adds options (a memory probe, a doorbell switch).
 */
export function inlineRuntime(
  config: TaskworkerConfig,
  tasks: readonly TaskDefinition[],
  more: Partial<DispatcherRuntimeOptions> & { readonly clock?: Clock } = {},
) {
  const registry = createRegistry(tasks, config);
  const sqs = new MemoryQueueService(more.clock ?? systemClock);
  const urls = { queues: { urgent: sqs.createQueue('urgent', { visibilityTimeoutSeconds: 30 }) }, archive: sqs.createQueue('archive') };
  const reports: BatchReport[] = [];
  const runtime = new DispatcherRuntime({
    bundle: { path: 'inline', config, tasks: [...tasks], registry },
    version: 'v1',
    urls,
    queues: sqs,
    executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
    logger: silentLogger,
    observer: { onBatch: (r) => reports.push(r) },
    // The test process's own resident set is not the dispatcher's: a busy test run can pass the
    // config's limit and trip the guard. Tests of the guard give their own reading.
    memory: { rss: () => 0 },
    // Seeded: a backoff drawn from Math.random rounds to 0 s once in 2 × its ceiling, and a test
    // that expects a retried message to be invisible for its backoff would then see it visible.
    random: seededRandom(1),
    ...more,
  });
  return { runtime, sqs, urls, reports, registry };
}
