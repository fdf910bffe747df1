/**
 * The local stand-in for EventBridge Scheduler: each of the config's schedules fires on its cron or
 * rate and sends the same envelope the stack's schedule sends (lib/policy/recurring-ticks.ts), with
 * the same job id, to its queue on the emulator.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Clock } from '../clock';
import type { TaskworkerConfig } from '../config/app-config';
import type { ScheduleConfig } from '../config/schedule-config';
import { describe } from '../errors';
import { nextFireTimes } from '../policy/cron-expressions';
import { scheduledTimeText, tickBody } from '../policy/recurring-ticks';
import type { QueueUrls } from '../ports';
import type { TaskRegistry } from '../tasks/task';

export interface LocalSchedulesOptions {
  readonly config: TaskworkerConfig;
  readonly registry: TaskRegistry;
  readonly urls: QueueUrls;
  readonly sqs: SQSClient;
  readonly clock: Clock;
  /** A tick was sent: its schedule, scheduled time and job id. */
  readonly onFire?: (tick: { readonly schedule: string; readonly scheduledTime: string; readonly jobId: string }) => void;
  readonly onError?: (message: string) => void;
}

export interface LocalSchedules {
  stop(): Promise<void>;
}

/** Sends of one tick tried before it is given up (EventBridge Scheduler retries for up to a day; a local run, briefly). */
const SEND_TRIES = 3;

export function startLocalSchedules(options: LocalSchedulesOptions): LocalSchedules {
  const stop = new AbortController();
  const since = new Date(options.clock.now());
  const loops = options.config.schedules.map((schedule) => fire(options, schedule, since, stop.signal));
  return {
    async stop() {
      stop.abort();
      await Promise.all(loops);
    },
  };
}

/** The queue a schedule publishes to: its own `queue`, else its task's. */
export function scheduleQueue(schedule: ScheduleConfig, registry: TaskRegistry): string | undefined {
  return schedule.queue ?? registry.get(schedule.task)?.queue;
}

async function fire(options: LocalSchedulesOptions, schedule: ScheduleConfig, since: Date, signal: AbortSignal): Promise<void> {
  const { clock } = options;
  const url = options.urls.queues[scheduleQueue(schedule, options.registry) ?? ''];
  if (!url) {
    options.onError?.(`schedule ${schedule.name}: task ${schedule.task} has no queue in this version; it does not fire`);
    return;
  }
  let last = since;
  while (!signal.aborted) {
    // From the last tick at the earliest: a timer that wakes a moment early must not fire that tick twice.
    const [next] = nextFireTimes(schedule, new Date(Math.max(clock.now(), last.getTime())), 1, since) as [Date];
    last = next;
    await clock.sleep(next.getTime() - clock.now(), signal);
    if (signal.aborted) return;
    const scheduledTime = scheduledTimeText(next);
    const body = tickBody(schedule, scheduledTime);
    for (let attempt = 1; attempt <= SEND_TRIES; attempt++) {
      try {
        await options.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
        options.onFire?.({ schedule: schedule.name, scheduledTime, jobId: JSON.parse(body).id as string });
        break;
      } catch (error) {
        if (attempt === SEND_TRIES || signal.aborted) {
          options.onError?.(`schedule ${schedule.name}: the tick of ${scheduledTime} could not be sent (${describe(error)})`);
          break;
        }
        await clock.sleep(1000, signal);
      }
    }
  }
}
