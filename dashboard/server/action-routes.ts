/** The API's actions (POSTs; the guard has checked the token and read-only mode): each one logged in a line. */

import { TokenValueError } from '../../lib/errors';
import { type ArchiveFilter, replayArchived } from '../../lib/operate/archive';
import { type BulkAction, type BulkFilter, operatorName, runBulk } from '../../lib/operate/bulk';
import { redriveDeadLetters } from '../../lib/operate/dead-letters';
import { cancelFlow, cancelJob, flowDepsOf } from '../../lib/operate/flow-commands';
import { retryJob, runJobNow } from '../../lib/operate/job-actions';
import { controlQueue } from '../../lib/operate/queue-controls';
import { MAX_SCHEDULE_SECONDS } from '../../lib/policy/due-times';
import { silentLogger } from '../../lib/ports';
import { Publisher } from '../../lib/publish/publisher';
import { completeStepToken } from '../../lib/settle/step-tokens';
import { ControlValueError, parsePriority, parseSlaSeconds } from '../../lib/track/operator-controls';
import { archiveFilter, integerParam, RequestError, stringParam } from './request-params';
import type { RouteContext } from './route-context';

/** Registers the actions on one job: cancel it (or its flow), retry it from the archive, run it now. */
export function registerJobActions({ route, context, options }: RouteContext): void {
  /** The version and the job an action names (its id is required). */
  const jobOf = async (input: { readonly version?: unknown; readonly id?: unknown }) => {
    const ctx = await context(stringParam('version', input.version));
    const id = stringParam('id', input.id);
    if (!id) throw new RequestError('id: required');
    return { ctx, id };
  };

  route('/api/job/cancel', async (input) => {
    const { ctx, id } = await jobOf(input);
    // Its dependents learn it: counted as a failed dependency (archived, or run if they ignore it).
    const result = await cancelJob(flowDepsOf(ctx), id, ctx.config.queues);
    options.log(`cancel ${id} in ${ctx.version}: ${result.outcome}`);
    return result;
  });

  // The CLI's `archive replay`, for the one job: its archived message back to its queue, attempts reset.
  route('/api/job/retry', async (input) => {
    const { ctx, id } = await jobOf(input);
    const result = await retryJob(ctx, id);
    options.log(`retry ${id} in ${ctx.version}: ${result.outcome}${result.outcome === 'skipped' ? ` (${result.why})` : ''}`);
    return result;
  });

  // A job parked until later, run now by the sweep's own path (lib/operate/job-actions.ts).
  route('/api/job/run-now', async (input) => {
    const { ctx, id } = await jobOf(input);
    const result = await runJobNow(ctx, id);
    options.log(`run now ${id} in ${ctx.version}: ${result.outcome}`);
    return result;
  });

  // A token a job waits for, completed as `taskworker tokens complete` does (lib/settle/step-tokens.ts).
  route('/api/token/complete', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const token = stringParam('token', input.token);
    if (!token) throw new RequestError('token: required');
    try {
      const result = await completeStepToken(
        { jobs: ctx.jobs, queues: ctx.queues, urls: ctx.urls, clock: ctx.clock, logger: silentLogger },
        token,
        input.value,
      );
      options.log(`complete token ${token} in ${ctx.version}: ${result.outcome}`);
      return result;
    } catch (error) {
      if (error instanceof TokenValueError) throw new RequestError(error.message);
      throw error;
    }
  });

  route('/api/flow/cancel', async (input) => {
    const { ctx, id } = await jobOf(input);
    const result = await cancelFlow(flowDepsOf(ctx), id, ctx.config.queues);
    options.log(
      `cancel flow of ${id} in ${ctx.version}: ${result.cancelled.length} cancelled, ${result.notCancelled.length} not cancelled${result.unknown ? ' (no such job)' : ''}`,
    );
    return result;
  });
}

/** Registers the actions on a queue's messages and settings: archive replay, DLQ redrive, pause, resume, priority and SLA. */
export function registerQueueActions({ route, context, queueNames, options }: RouteContext): void {
  route('/api/archive/replay', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const ids = input.messageIds;
    if (ids !== undefined && (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string'))) {
      throw new RequestError('messageIds: expected a non-empty list of message ids');
    }
    const filter: ArchiveFilter = { ...archiveFilter(input), ...(ids ? { messageIds: ids as string[] } : {}) };
    const limit = integerParam('limit', input.limit === undefined ? undefined : String(input.limit), 10_000, 1, 100_000);
    const result = await replayArchived(ctx, filter, limit);
    options.log(`replay ${JSON.stringify(filter)} in ${ctx.version}: ${result.replayed} replayed, ${result.skipped.length} skipped`);
    return result;
  });

  // `taskworker jobs bulk`: the page asks a dry run first, names its count in the confirm step, then runs it.
  route('/api/bulk', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const action = stringParam('action', input.action);
    const time = (name: 'since' | 'until') => {
      const value = input[name];
      if (value === undefined || value === null || value === '') return undefined;
      const at = typeof value === 'number' ? value : Date.parse(String(value));
      if (!Number.isFinite(at)) throw new RequestError(`${name} ${JSON.stringify(value)}: expected epoch ms or an ISO-8601 time`);
      return at;
    };
    const since = time('since');
    const until = time('until');
    const filter: BulkFilter = {
      ...archiveFilter(input),
      ...Object.fromEntries(
        (['queue', 'state', 'tag', 'key'] as const).flatMap((f) => {
          const value = stringParam(f, input[f]);
          return value === undefined ? [] : [[f, value]];
        }),
      ),
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
    };
    const number = (name: 'limit' | 'ratePerSecond') => {
      const value = input[name];
      if (value === undefined || value === null) return undefined;
      if (typeof value !== 'number') throw new RequestError(`${name}: expected a number, got ${JSON.stringify(value)}`);
      return value;
    };
    const limit = number('limit');
    const ratePerSecond = number('ratePerSecond');
    const result = await runBulk(ctx, action as BulkAction, filter, {
      dryRun: input.dryRun === true,
      who: `dashboard (${operatorName()})`,
      ...(limit !== undefined ? { limit } : {}),
      ...(ratePerSecond !== undefined ? { ratePerSecond } : {}),
    });
    if (!result.dryRun) {
      options.log(
        `bulk ${action} ${JSON.stringify(filter)} in ${ctx.version}: ${result.done} of ${result.matched} done, ${result.skipped.length} skipped`,
      );
    }
    return result;
  });

  route('/api/dlq/redrive', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const queue = stringParam('queue', input.queue);
    const results = await redriveDeadLetters(ctx, queue === undefined ? undefined : (queueNames(ctx, queue)[0] as string));
    options.log(`dlq redrive ${queue ?? 'all queues'} in ${ctx.version}: ${results.map((r) => `${r.queue} ${r.messages}`).join(', ')}`);
    return results;
  });

  route('/api/queue/control', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const queue = stringParam('queue', input.queue) ?? '';
    if (!ctx.controls) throw new RequestError(`version ${ctx.version} keeps no controls (no stats table)`);
    const action = input.action;
    if (action !== 'pause' && action !== 'resume' && action !== 'set' && action !== 'reset')
      throw new RequestError(`action ${JSON.stringify(action)}: expected pause, resume, set or reset`);
    let outcome: Awaited<ReturnType<typeof controlQueue>>;
    try {
      // The dispatchers switch a paused queue's doorbell trigger off themselves at their next scheduled invocation.
      outcome = await controlQueue(
        { config: ctx.config, controls: ctx.controls, now: () => ctx.clock.now() },
        queue,
        action === 'set'
          ? {
              kind: 'set',
              ...(input.priority !== undefined ? { priority: parsePriority(input.priority, 'priority') } : {}),
              ...(input.slaSeconds !== undefined ? { slaSeconds: parseSlaSeconds(input.slaSeconds, 'slaSeconds') } : {}),
            }
          : { kind: action },
      );
    } catch (error) {
      if (error instanceof ControlValueError) throw new RequestError(error.message);
      throw error;
    }
    options.log(`queue ${action} ${queue} in ${ctx.version}: revision ${outcome.revision}`);
    return outcome;
  });
}

/** Registers publishing a task from the page's form. */
export function registerPublish({ route, context, options }: RouteContext): void {
  route('/api/publish', async (input) => {
    const ctx = await context(stringParam('version', input.version));
    const task = stringParam('task', input.task);
    if (!task) throw new RequestError('task: required');
    const tasks = await options.tasks();
    const queue = stringParam('queue', input.queue);
    if (queue === undefined && !tasks.some((t) => t.name === task))
      throw new RequestError(`task ${JSON.stringify(task)}: not defined in this app`);
    const delay = input.delaySeconds;
    if (delay !== undefined && (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > MAX_SCHEDULE_SECONDS)) {
      throw new RequestError(`delaySeconds ${JSON.stringify(delay)}: expected an integer 0..${MAX_SCHEDULE_SECONDS}`);
    }
    const validate = tasks.find((t) => t.name === task)?.validate;
    if (validate) {
      try {
        validate(input.payload ?? null);
      } catch (error) {
        throw new RequestError(`payload refused by ${task}'s validate: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const publisher = new Publisher({
      config: ctx.config,
      version: ctx.version,
      tasks,
      queues: ctx.queues,
      urls: ctx.urls,
      jobs: ctx.jobs,
      clock: ctx.clock,
    });
    const published = await publisher.publish(task, input.payload ?? null, {
      ...(queue !== undefined ? { queue } : {}),
      ...(typeof delay === 'number' && delay > 0 ? { delaySeconds: delay } : {}),
      ...(input.appData !== undefined ? { appData: input.appData } : {}),
    });
    options.log(`publish ${task} in ${ctx.version}: job ${published.jobId} to ${published.queue}`);
    return published;
  });
}
