/**
 * A short task's runs of one turn go to one pool thread in one hand-off (one wake-up, not one per
 * run), and nothing of a thread per body is given up for it: a run waiting behind a body that turns
 * out long or runaway starts on another thread, once, with its whole limit from its own start, and
 * a cancel of a run still waiting its turn ends it there and then. Read from each body's own
 * journal (its start and its thread) and the outcomes; nothing here times anything.
 */
import { join } from 'node:path';
import type { TaskOutcome, TaskRun } from '../../lib/run/executor-types';
import { SHORT_AFTER_RUNS, ThreadPoolExecutor, type ThreadPoolOptions } from '../../lib/run/thread-pool-executor';
import type { TaskBundle } from '../../lib/tasks/bundle';
import { buildFixtureBundle, tempFile } from '../helpers/emulators';
import { readJournal } from '../helpers/run';

const CONFIG = join(__dirname, '..', 'fixtures', 'hand-off', 'taskworker.config.ts');

let bundle: TaskBundle;
beforeAll(async () => {
  bundle = await buildFixtureBundle(CONFIG);
}, 60_000);

interface Quick {
  readonly ms?: number;
  readonly spin?: boolean;
}

/**
 * A pool of `size` loaded threads, the quick task's runs on it, and its journal. `timing` sets how
 * short a body is short and how long a run waits before it moves (a test of what is gathered sets
 * both past anything a busy machine could take, so the verdict never rests on its speed).
 */
async function withPool(
  size: number,
  test: (on: ReturnType<typeof runsOn>) => Promise<void>,
  timing: Pick<ThreadPoolOptions, 'shortRunMs' | 'moveAfterMs'> = {},
) {
  const pool = new ThreadPoolExecutor({ bundlePath: bundle.path, size, killGraceMs: 200, ...timing });
  try {
    pool.warm();
    const held = await Promise.all(Array.from({ length: size }, () => pool.reserve(Date.now() + 30_000)));
    for (const thread of held) thread?.release();
    await test(runsOn(pool, tempFile('quick.jsonl')));
  } finally {
    await pool.close();
  }
}

function runsOn(pool: ThreadPoolExecutor, journal: string) {
  let next = 0;
  const run = (quick: Quick = {}, cancel?: AbortSignal): { n: number; outcome: Promise<TaskOutcome> } => {
    const n = next++;
    const task: TaskRun = {
      task: 'quick',
      jobId: `job-${n}`,
      queue: 'work',
      attempt: 1,
      payload: { journal, n, ...quick },
      appData: null,
      timeLimitMs: 1000,
      fencingToken: 1,
    };
    // Each reserves its thread first, as the dispatcher does before it claims.
    const outcome = pool
      .reserve(Date.now() + 30_000)
      .then((reservation) => pool.run(task, { heartbeat: async () => true, ...(cancel ? { cancel } : {}) }, reservation));
    return { n, outcome };
  };
  /** Runs started together (one turn of the event loop, as a batch's are). */
  const together = (quicks: readonly Quick[]) => quicks.map((q) => run(q));
  /** Enough short runs, one at a time, for the pool to take the task as short. */
  const warmUp = async () => {
    for (let i = 0; i < SHORT_AFTER_RUNS; i++) expect((await run().outcome).status).toBe('succeeded');
  };
  /** Each body's start, by run number: its thread, and how often it started. */
  const starts = () => {
    const byRun = new Map<number, { thread: number; times: number }>();
    for (const entry of readJournal(journal)) {
      const n = entry.n as number;
      byRun.set(n, { thread: entry.thread as number, times: (byRun.get(n)?.times ?? 0) + 1 });
    }
    return byRun;
  };
  return { run, together, warmUp, starts };
}

const threadsOf = (starts: ReadonlyMap<number, { thread: number }>, runs: ReadonlyArray<{ n: number }>) =>
  new Set(runs.map((r) => starts.get(r.n)?.thread));

it('hands a short task’s runs of one turn to one thread, once the task has shown it is short', async () => {
  await withPool(
    4,
    async ({ together, warmUp, starts }) => {
      // Not known short yet: four runs together take the four threads.
      const cold = together([{}, {}, {}, {}]);
      expect((await Promise.all(cold.map((r) => r.outcome))).map((o) => o.status)).toEqual(Array(4).fill('succeeded'));
      await warmUp();
      const warm = together(Array(10).fill({}));
      expect((await Promise.all(warm.map((r) => r.outcome))).map((o) => o.status)).toEqual(Array(10).fill('succeeded'));
      const seen = starts();
      expect(threadsOf(seen, cold).size).toBe(4);
      expect(threadsOf(seen, warm).size).toBe(1);
      expect([...seen.values()].every((s) => s.times === 1)).toBe(true);
    },
    { shortRunMs: 1_000, moveAfterMs: 30_000 },
  );
}, 60_000);

it('starts the runs behind a runaway body on other threads, each once with its whole limit; only the runaway times out', async () => {
  await withPool(4, async ({ together, warmUp, starts }) => {
    await warmUp();
    const [runaway, ...behind] = together([{ spin: true }, {}, { ms: 600 }, {}, { ms: 600 }]);
    if (!runaway) throw new Error('no runaway');
    expect(await runaway.outcome).toMatchObject({ status: 'timed-out', error: { type: 'TimeLimitExceededError' } });
    expect((await Promise.all(behind.map((r) => r.outcome))).map((o) => o.status)).toEqual(Array(4).fill('succeeded'));
    const seen = starts();
    // Its thread never ran anything after it (it was terminated at the runaway's limit).
    const runawayThread = seen.get(runaway.n)?.thread;
    expect(behind.map((r) => seen.get(r.n)?.thread).filter((t) => t === runawayThread)).toEqual([]);
    expect(behind.map((r) => seen.get(r.n)?.times)).toEqual([1, 1, 1, 1]);
  });
}, 60_000);

it('gives each run of a shared hand-off its whole limit from its own start: two 600 ms bodies on one thread, limits of 1 s', async () => {
  await withPool(1, async ({ together, warmUp, starts }) => {
    await warmUp();
    const both = together([{ ms: 600 }, { ms: 600 }]);
    expect((await Promise.all(both.map((r) => r.outcome))).map((o) => o.status)).toEqual(['succeeded', 'succeeded']);
    expect(both.map((r) => starts().get(r.n)?.times)).toEqual([1, 1]);
  });
}, 60_000);

it('ends a run cancelled while it waits its turn at once: its body never starts, its thread goes on', async () => {
  await withPool(1, async ({ run, warmUp, starts }) => {
    await warmUp();
    const cancel = new AbortController();
    const first = run({ ms: 300 });
    const second = run({}, cancel.signal);
    // The second waits its turn for the one thread; its cancel comes long before its body could start.
    await new Promise((resolve) => setImmediate(resolve));
    cancel.abort();
    expect(await second.outcome).toMatchObject({ status: 'cancelled', error: { type: 'JobCancelledError' } });
    expect(await first.outcome).toMatchObject({ status: 'succeeded' });
    const after = run();
    expect(await after.outcome).toMatchObject({ status: 'succeeded' });
    const seen = starts();
    expect(seen.has(second.n)).toBe(false);
    // The same thread ran the next one: the cancel did not cost it.
    expect(seen.get(after.n)?.thread).toBe(seen.get(first.n)?.thread);
  });
}, 60_000);
