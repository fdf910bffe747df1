/**
 * `ctx.step`, on the thread that runs the body: each step's result is kept on the job's record
 * through `hooks.step` (a fenced write the dispatcher makes), in the order the steps were called;
 * the steps an earlier attempt kept (`run.steps`) are returned again without running.
 */
import { LeaseLostError, StepError } from '../errors';
import { MAX_RESULT_BYTES } from '../policy/job-rules';
import type { TaskSteps } from '../tasks/task';
import { MAX_STEPS } from '../track/job-record';
import type { RunHooks, TaskRun } from './executor-types';

/** Step names: 1..128 characters. */
const MAX_STEP_NAME = 128;

export function taskSteps(run: TaskRun, hooks: Pick<RunHooks, 'step'>): TaskSteps {
  const kept = run.steps ?? [];
  const used = new Map<string, number>();
  let calls = 0;
  /** The step that failed in this attempt: no step after it can be kept in order. */
  let failed: string | undefined;
  /** The previous step's keeping, done or not: each step is kept after the ones called before it. */
  let previous: Promise<unknown> = Promise.resolve();

  const parsed = (json: string | undefined) => (json === undefined ? undefined : JSON.parse(json));

  return {
    run<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
      if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME) {
        return Promise.reject(new StepError('bad-name', String(name), `a step name is 1..${MAX_STEP_NAME} characters`));
      }
      const index = calls++;
      const earlier = used.get(name);
      if (earlier !== undefined) {
        return Promise.reject(
          new StepError('duplicate-name', name, `the name is step ${earlier + 1}'s already: step names are unique within a job`),
        );
      }
      used.set(name, index);
      const prior = kept[index];
      if (prior) {
        if (prior.name !== name) {
          return Promise.reject(
            new StepError(
              'order',
              name,
              `it is step ${index + 1} of job ${run.jobId}, whose kept step ${index + 1} is ${JSON.stringify(prior.name)}: steps must run in the same order on every attempt`,
            ),
          );
        }
        return Promise.resolve(parsed(prior.result) as T);
      }
      if (index >= MAX_STEPS) return Promise.reject(new StepError('too-many', name, `a job keeps at most ${MAX_STEPS} steps`));
      const before = previous;
      const step = (async (): Promise<T> => {
        let value: T;
        try {
          value = await fn();
        } catch (error) {
          failed ??= name;
          throw error;
        }
        const json = resultJson(name, value);
        await before.catch(() => undefined);
        if (failed !== undefined) {
          throw new StepError(
            'after-failure',
            name,
            `step ${JSON.stringify(failed)} failed before it in this attempt: a failed step ends the attempt`,
          );
        }
        if (hooks.step && !(await hooks.step({ index, name, ...(json !== undefined ? { result: json } : {}) }))) {
          failed ??= name;
          throw new LeaseLostError(run.jobId, run.fencingToken);
        }
        // What a later attempt would get back: the value as JSON keeps it.
        return parsed(json) as T;
      })();
      previous = step;
      return step;
    },
  };
}

function resultJson(name: string, value: unknown): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new StepError('not-json', name, `its result is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (json !== undefined && Buffer.byteLength(json) > MAX_RESULT_BYTES) {
    throw new StepError(
      'too-large',
      name,
      `its result is ${Buffer.byteLength(json)} bytes of JSON; a step keeps at most ${MAX_RESULT_BYTES} (keep large data elsewhere and return its key)`,
    );
  }
  return json;
}
