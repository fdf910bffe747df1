/** What a publisher asks of its jobs once published: cancel one, wait for its result, list those with a tag. */
import { PublishOptionError, ResultUnavailableError } from '../errors';
import { edgesOf } from '../policy/dependency-rules';
import { cancelCannotStop } from '../policy/job-rules';
import { silentLogger } from '../ports';
import { propagate } from '../settle/dependents';
import { completeStepToken, type TokenResult } from '../settle/step-tokens';
import type { CancelResult, JobRecord } from '../track/job-record';
import { JOB_ID_PATTERN, tagListProblem } from '../wire/envelope';
import type { PublishContext } from './publish-context';

import type { Published } from './publish-options';
import { type JobResult, storedResultReader, type WaitOptions, waitForResult } from './results';
export async function cancelJob(ctx: PublishContext, jobId: string): Promise<CancelResult> {
  if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
    throw new PublishOptionError('jobId', jobId, '1..128 printable ASCII characters');
  const jobs = ctx.jobStore();
  if (ctx.config.queues.some((q) => q.tracking !== 'full')) {
    const record = await jobs.get(jobId);
    if (record && cancelCannotStop(record, ctx.config.queues)) return { outcome: 'not-scheduled', record };
  }
  const result = await jobs.cancel(jobId, ctx.clock.now());
  // The jobs waiting for it learn it will not succeed: `fail` ones are archived, `ignore` ones run.
  if (result.outcome === 'cancelled') {
    const flows = { jobs, queues: ctx.queues, urls: await ctx.queueUrls(), clock: ctx.clock, logger: silentLogger };
    await propagate(flows, jobId, true, edgesOf(result.record));
  }
  return result;
}

export async function jobResult(
  ctx: PublishContext,
  job: string | Pick<Published, 'jobId' | 'queue'>,
  options: WaitOptions = {},
): Promise<JobResult> {
  const jobId = typeof job === 'string' ? job : job.jobId;
  if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
    throw new PublishOptionError('jobId', jobId, '1..128 printable ASCII characters');
  const untracked = (queueName: string) => {
    const queue = ctx.config.queues.find((q) => q.name === queueName);
    if (queue && queue.tracking !== 'full') throw new ResultUnavailableError(queue.name, queue.tracking);
  };
  if (typeof job !== 'string') untracked(job.queue);
  return waitForResult(
    ctx.jobStore(),
    jobId,
    ctx.clock,
    { ...options, check: (record) => untracked(record.queue) },
    storedResultReader(() => ctx.payloadStore()),
  );
}

export async function taggedJobs(
  ctx: PublishContext,
  tag: string,
  options: { limit?: number; before?: number } = {},
): Promise<JobRecord[]> {
  const problem = tagListProblem([tag]);
  if (problem) throw new PublishOptionError('tag', tag, `a tag: it ${problem}`);
  return ctx.jobStore().jobsByTag(tag, options.limit ?? 50, options.before);
}

export async function completeToken(ctx: PublishContext, token: string, value: unknown): Promise<TokenResult> {
  const deps = { jobs: ctx.jobStore(), queues: ctx.queues, urls: await ctx.queueUrls(), clock: ctx.clock, logger: silentLogger };
  return completeStepToken(deps, token, value);
}
