/**
 * `ctx.step`, on the thread that runs the body: each step's result is kept on the job's record
 * through `hooks.step` (a fenced write the dispatcher makes), in the order the steps were called;
 * the steps an earlier attempt kept (`run.steps`) are returned again without running. A sleep or a
 * token wait ends the attempt parked ({@link StepPark}, carried out by the dispatcher's park write),
 * and so does a step that would not fit the attempt's time any more (a continuation).
 */
import { randomBytes } from 'node:crypto';
import { durationSeconds } from '../config/durations';
import { LeaseLostError, StepError, StepParked, StepTimeLimitError } from '../errors';
import { MAX_RESULT_BYTES } from '../policy/job-rules';
import { payloadAt } from '../policy/payload-paths';
import type { EventWaitRule, ReceivedEvent, TaskSteps } from '../tasks/task';
import { eventWaitKey, MAX_STEPS, type StepWaitAsk, stepToken } from '../track/job-record';
import type { KeptStep, RunHooks, StepPark, TaskRun } from './executor-types';

/** Step names: 1..128 characters. */
const MAX_STEP_NAME = 128;

/** The longest sleep or wait: a year. */
export const MAX_STEP_WAIT_MS = 365 * 24 * 3600_000;

/** What the body's steps need beyond the run: the attempt's hard end and the task's per-step limit. */
export interface StepLimits {
  /** Epoch ms the attempt is stopped at (`ctx.deadline`). */
  readonly deadline: number;
  /** The task's `stepTimeLimitSeconds`, in ms. */
  readonly stepTimeLimitMs?: number;
  /** The events the task may wait for (`waitsFor`). */
  readonly waits?: readonly EventWaitRule[];
}

/** The body's steps, and where it parked its job (read once the body ended). */
export interface BodySteps {
  readonly steps: TaskSteps;
  parked(): StepPark | undefined;
}

export function taskSteps(
  run: TaskRun,
  hooks: Pick<RunHooks, 'step'>,
  limits: StepLimits = { deadline: Number.POSITIVE_INFINITY },
): BodySteps {
  const kept = run.steps ?? [];
  const used = new Map<string, number>();
  let calls = 0;
  /** Steps this attempt ran (not returned from the kept ones). */
  let ranHere = 0;
  /** The step that failed in this attempt: no step after it can be kept in order. */
  let failed: string | undefined;
  /** Where the body parked the job: nothing after it runs. */
  let parkedAt: StepPark | undefined;
  /** The previous step's keeping, done or not: each step is kept after the ones called before it. */
  let previous: Promise<unknown> = Promise.resolve();

  const parsed = (json: string | undefined) => (json === undefined ? undefined : JSON.parse(json));

  /** A new step's place in the sequence, or why it cannot have one; the kept step there, if any. */
  const place = (name: string, kind: 'run' | StepWaitAsk['kind']): { index: number; prior: KeptStep | undefined } => {
    if (parkedAt) throw new StepParked(parkedAt.name);
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME) {
      throw new StepError('bad-name', String(name), `a step name is 1..${MAX_STEP_NAME} characters`);
    }
    const index = calls++;
    const earlier = used.get(name);
    if (earlier !== undefined) {
      throw new StepError('duplicate-name', name, `the name is step ${earlier + 1}'s already: step names are unique within a job`);
    }
    used.set(name, index);
    const prior = kept[index];
    if (prior && (prior.name !== name || (prior.wait?.kind ?? 'run') !== kind)) {
      const kinds: Record<string, string> = { run: '', sleep: 'the sleep ', token: 'the token wait ', event: 'the event wait ' };
      const asked = kind === 'run' ? '' : ` (${kinds[kind]?.trim()})`;
      throw new StepError(
        'order',
        name,
        `it is step ${index + 1}${asked} of job ${run.jobId}, whose kept step ${index + 1} is ${kinds[prior.wait?.kind ?? 'run'] ?? ''}${JSON.stringify(prior.name)}: steps must run in the same order on every attempt`,
      );
    }
    if (!prior && index >= MAX_STEPS) throw new StepError('too-many', name, `a job keeps at most ${MAX_STEPS} steps`);
    return { index, prior };
  };

  /** Ends the attempt parked at `park`, once the steps before it are kept. */
  const park = async (park: StepPark): Promise<never> => {
    parkedAt = park;
    await previous.catch(() => undefined);
    throw new StepParked(park.name);
  };

  /**
   * A wait's step kept with its token before the job parks on it (so every attempt names the same
   * token, and a completion that comes before the park still finds the step): the one kept before,
   * or a new one.
   */
  const keptWait = async (index: number, name: string, prior: KeptStep | undefined, ask: StepWaitAsk): Promise<StepWaitAsk> => {
    const token = prior?.wait?.token;
    if (token !== undefined) return { ...ask, token };
    const wait: StepWaitAsk = { ...ask, token: stepToken(run.jobId, index, randomBytes(12).toString('base64url')) };
    const before = previous;
    const keeping = (async () => {
      await before.catch(() => undefined);
      if (!(await hooks.step?.({ index, name, wait }))) throw new LeaseLostError(run.jobId, run.fencingToken);
    })();
    previous = keeping;
    await keeping;
    return wait;
  };

  const untracked = (name: string) =>
    hooks.step
      ? undefined
      : new StepError('untracked', name, 'a sleep or a wait parks the job in the jobs table: its queue needs tracking `full`');

  return {
    parked: () => parkedAt,
    steps: {
      run<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
        let index: number;
        let prior: KeptStep | undefined;
        try {
          ({ index, prior } = place(name, 'run'));
        } catch (error) {
          return Promise.reject(error);
        }
        if (prior) return Promise.resolve(parsed(prior.result) as T);
        // A step that may not end before the attempt is stopped: the job continues in a new invocation.
        const limitMs = limits.stepTimeLimitMs;
        if (limitMs !== undefined && hooks.step && ranHere > 0 && limits.deadline - Date.now() < limitMs) {
          return park({ index, name, wait: { kind: 'continue', forMs: 0 }, keep: false });
        }
        ranHere += 1;
        const before = previous;
        const step = (async (): Promise<T> => {
          let value: T;
          try {
            value = await (limitMs === undefined ? fn() : withinLimit(name, limitMs, fn));
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

      async sleep(name: string, duration: number | string | Date): Promise<void> {
        const { index, prior } = place(name, 'sleep');
        // Kept: the job slept there and was woken (at its time, or run now by an operator).
        if (prior) return;
        const refusal = untracked(name);
        if (refusal) throw refusal;
        const wait: StepWaitAsk =
          duration instanceof Date ? { kind: 'sleep', until: untilOf(name, duration) } : { kind: 'sleep', forMs: spanMs(name, duration) };
        return park({ index, name, wait, keep: true });
      },

      async waitForToken<T>(
        name: string,
        options: { readonly timeout: number | string; readonly notify?: (token: string) => unknown },
      ): Promise<T | null> {
        const { index, prior } = place(name, 'token');
        if (prior?.completedAt !== undefined) return parsed(prior.result) as T;
        // The job parked on it and was resumed without a completion: the wait timed out.
        if (prior?.waited) return null;
        const refusal = untracked(name);
        if (refusal) throw refusal;
        const forMs = spanMs(name, options?.timeout);
        const wait = await keptWait(index, name, prior, { kind: 'token', forMs });
        if (options.notify && wait.token !== undefined) await options.notify(wait.token);
        return park({ index, name, wait, keep: false });
      },

      async waitForEvent<T>(
        name: string,
        options: { readonly event: string; readonly timeout: number | string },
      ): Promise<ReceivedEvent<T> | null> {
        const { index, prior } = place(name, 'event');
        if (prior?.completedAt !== undefined) return parsed(prior.result) as ReceivedEvent<T>;
        if (prior?.waited) return null;
        const refusal = untracked(name);
        if (refusal) throw refusal;
        const rule = limits.waits?.find((r) => r.event === options?.event);
        if (!rule) {
          const declared = (limits.waits ?? []).map((r) => r.event).join(', ') || 'none';
          throw new StepError(
            'undeclared-event',
            name,
            `event ${JSON.stringify(options?.event)} is not in the task's waitsFor (${declared})`,
          );
        }
        const forMs = spanMs(name, options.timeout);
        // The key its waiters are found by: the event, and the matched field's value in this job's payload.
        const key = eventWaitKey(
          rule.event,
          rule.match !== undefined ? { path: rule.match, value: payloadAt(run.payload, rule.match) } : undefined,
        );
        const wait = await keptWait(index, name, prior, { kind: 'event', forMs, event: rule.event, key });
        return park({ index, name, wait, keep: false });
      },
    },
  };
}

/** Runs a step's `fn`, failing it past the task's per-step limit (the attempt's own limit still stops the thread). */
async function withinLimit<T>(name: string, limitMs: number, fn: () => T | Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const over = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StepTimeLimitError(name, limitMs)), limitMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(fn), over]);
  } finally {
    clearTimeout(timer);
  }
}

/** A sleep's or a wait's span in ms: ms given, or `'90s'`, `'10m'`, `'2h'`, `'7d'`; 0..1 year. */
function spanMs(name: string, given: unknown): number {
  const ms = typeof given === 'number' ? given : durationSeconds(given) * 1000;
  if (!(ms >= 0 && ms <= MAX_STEP_WAIT_MS)) {
    throw new StepError('bad-duration', name, `${JSON.stringify(given)} is not a span of 0 to 1 year (ms, or '90s', '2h', '7d')`);
  }
  return ms;
}

/** A sleep's end given as a Date: within a year from now (a past one ends it at once). */
function untilOf(name: string, until: Date): number {
  const at = until.getTime();
  if (!Number.isFinite(at) || at - Date.now() > MAX_STEP_WAIT_MS) {
    throw new StepError('bad-duration', name, `${String(until)} is not a time within a year from now`);
  }
  return at;
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
