/**
 * Lifecycle hooks: `onSuccess`, `onRetry` and `onArchived`, per task (in its definition) and per
 * app (`hooks` in the config). They run on the dispatcher thread once a batch is settled — the
 * outcome is in the job record and the queue, so a hook can never change it — each under its own
 * time limit (`hooks.timeoutMs`, and never past the invocation's settle margin). A hook that
 * throws or overruns is logged and counted (`hook: 'failed'` on the job's report, the
 * `HookFailures` metric), never retried: hooks are at most once (a dispatcher lost between the
 * settle and its hooks skips them; an outcome whose settle failed runs none, its message comes back).
 */
import type { Clock } from '../clock';
import type { TaskworkerConfig } from '../config/app-config';
import { describe } from '../errors';
import type { HOOK_NAMES, HookContext, JobHooks } from '../hook-types';
import type { Logger } from '../ports';
import type { TaskRegistry } from '../tasks/task';
import type { JobReport } from './report';

export type { HookContext, JobHooks } from '../hook-types';

/** What a settled batch's hooks need of each job beside its report. */
export interface HookJob {
  readonly payload: unknown;
  readonly appData: unknown;
  readonly result?: string;
}

/** What running hooks touches: the task definitions and the app's hooks, as this worker. */
export interface HookPorts {
  readonly config: TaskworkerConfig;
  readonly registry: TaskRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workerId: string;
}

/** The least a hook may have before the invocation's deadline, or it is not started. */
const MIN_HOOK_MS = 100;

/**
 * Runs the hooks of a settled batch's jobs (task hooks, then the app's), all of the batch's at once,
 * each under its time limit; returns the reports with `hook` set where a hook ran.
 */
export async function runHooks(
  deps: HookPorts,
  queue: string,
  reports: readonly JobReport[],
  jobs: ReadonlyMap<string, HookJob>,
  deadline: number,
): Promise<JobReport[]> {
  const app = deps.config.hooks;
  return Promise.all(
    reports.map(async (report) => {
      if (report.unsettled || report.jobId === undefined) return report;
      const calls = hookCalls(report, [report.task ? deps.registry.get(report.task) : undefined, app]);
      if (calls.length === 0) return report;
      const job = jobs.get(report.messageId);
      const limitMs = Math.min(app.timeoutMs, deadline - deps.clock.now());
      if (limitMs < MIN_HOOK_MS) {
        deps.logger.warn('no time left in the invocation for the job’s hooks; skipped', { jobId: report.jobId, queue });
        return { ...report, hook: 'skipped' as const };
      }
      const failures = await Promise.all(
        calls.map(async ({ name, call }) => {
          const timeout = new AbortController();
          const ctx: HookContext = {
            jobId: report.jobId as string,
            task: report.task,
            queue,
            attempt: report.attempt,
            payload: job?.payload ?? null,
            appData: job?.appData ?? null,
            workerId: deps.workerId,
            signal: timeout.signal,
          };
          let timer: NodeJS.Timeout | undefined;
          try {
            await Promise.race([
              Promise.resolve().then(() => call(ctx, job)),
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => {
                  timeout.abort();
                  reject(new Error(`${name} did not finish within ${limitMs} ms`));
                }, limitMs);
              }),
            ]);
            return false;
          } catch (error) {
            deps.logger.error('hook failed; the job’s outcome stands', {
              hook: name,
              jobId: report.jobId,
              task: report.task,
              error: describe(error),
            });
            return true;
          } finally {
            clearTimeout(timer);
          }
        }),
      );
      return { ...report, hook: failures.some(Boolean) ? ('failed' as const) : ('ran' as const) };
    }),
  );
}

type HookCall = { readonly name: (typeof HOOK_NAMES)[number]; readonly call: (ctx: HookContext, job: HookJob | undefined) => unknown };

/** The hooks an outcome calls, from each source that defines one. */
function hookCalls(report: JobReport, sources: ReadonlyArray<JobHooks | undefined>): HookCall[] {
  const error = report.error ?? { type: 'Error', message: 'no error recorded' };
  return sources.flatMap((hooks): HookCall[] => {
    if (!hooks) return [];
    switch (report.outcome) {
      case 'succeeded': {
        const hook = hooks.onSuccess;
        return hook
          ? [
              {
                name: 'onSuccess',
                call: (ctx, job) => hook.call(hooks, job?.result === undefined ? undefined : JSON.parse(job.result), ctx),
              },
            ]
          : [];
      }
      case 'retried': {
        const hook = hooks.onRetry;
        return hook ? [{ name: 'onRetry', call: (ctx) => hook.call(hooks, error, ctx) }] : [];
      }
      case 'archived': {
        const hook = hooks.onArchived;
        return hook ? [{ name: 'onArchived', call: (ctx) => hook.call(hooks, error, report.reason ?? 'exhausted', ctx) }] : [];
      }
      default:
        return [];
    }
  });
}
