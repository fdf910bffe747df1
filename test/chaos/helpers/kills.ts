import type { LocalStack } from '../../../lib/local/dev';

/**
 * SIGKILLs one of the stack's live dispatcher processes (chosen at random) each time `progress()`
 * (the share of the work done, 0–1, read every `pollMs`) first passes one of `at` (ascending): a
 * poll that finds several passed kills as many processes. Paced by the work rather than a clock, so a fast machine that finishes
 * early still sees every kill land while there is work left.
 */
export function killAtProgress(local: LocalStack, progress: () => Promise<number>, at: readonly number[], pollMs: number) {
  const killedAt = new Map<number, number>();
  let kills = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && kills < at.length) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      const done = stopped ? 0 : await progress();
      while (kills < at.length && done >= (at[kills] as number)) {
        const alive = local.dispatchers.filter((c) => !c.killed && c.exitCode === null && c.signalCode === null && c.pid !== undefined);
        const victim = alive[Math.floor(Math.random() * alive.length)];
        if (!victim?.pid) break;
        killedAt.set(victim.pid, Date.now());
        victim.kill('SIGKILL');
        kills += 1;
      }
    }
  })();
  return {
    killedAt: killedAt as ReadonlyMap<number, number>,
    kills: () => kills,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** One run of a job, from its task's effects log: its start's own fields, and when it started and ended. */
/** A run as its log tells it; `completed`: its body returned (its end noted as such, not only that it stopped). */
export type LoggedRun<F> = F & {
  readonly job: string;
  readonly pid: number;
  readonly start: number;
  readonly end: number;
  readonly completed: boolean;
};

/**
 * Each run noted in an effects table (`<job>#run#<attempt>#<pid>#start` / `#end`, each value JSON
 * with `at`; a start's also its `pid` and the task's own fields). A run without its end ended when
 * its process was killed (`killedAt`); or, when its job has a later attempt in the log, at its time
 * limit (`limitMs`: the task's time limit and the kill grace — on a loaded machine a body can
 * outlast it, and its thread is terminated before noting the end). Any other run without an end
 * is an error.
 */
export function runsOf<F>(
  effects: ReadonlyArray<Record<string, unknown>>,
  killedAt: ReadonlyMap<number, number>,
  limitMs?: number,
): Array<LoggedRun<F>> {
  const byPk = new Map(effects.map((e) => [String(e.pk), e]));
  const starts = [...byPk.keys()].flatMap((pk) => {
    const m = /^(.+)#run#(-?\d+)#(\d+)#start$/.exec(pk);
    if (!m) return [];
    // A body is told which attempt it is: the first is 1 (a claim handed back and parked once gave it -1).
    if (Number(m[2]) < 1) throw new Error(`run ${pk} was told attempt ${m[2]}`);
    return [{ pk, job: m[1] as string, attempt: Number(m[2]), pid: Number(m[3]) }];
  });
  const lastAttempt = new Map<string, number>();
  for (const s of starts) lastAttempt.set(s.job, Math.max(lastAttempt.get(s.job) ?? 0, s.attempt));
  const runs: Array<LoggedRun<F>> = [];
  for (const { pk, job, attempt } of starts) {
    const { at, pid, ...fields } = JSON.parse(String(byPk.get(pk)?.value)) as F & { at: number; pid: number };
    const end = byPk.get(pk.replace(/#start$/, '#end'));
    const timedOut = limitMs !== undefined && (lastAttempt.get(job) ?? 0) > attempt ? at + limitMs : undefined;
    const noted = end ? (JSON.parse(String(end.value)) as { at: number; completed?: boolean }) : undefined;
    const endAt = noted ? noted.at : (killedAt.get(pid) ?? timedOut);
    if (endAt === undefined) throw new Error(`run ${pk} has no end, its process ${pid} was not killed and its job has no later attempt`);
    runs.push({ ...(fields as F), job, pid, start: at, end: endAt, completed: noted?.completed === true });
  }
  return runs;
}

/** A job a dispatcher process held when it was killed: running, last started or taken over by that process. */
export interface HeldAtKill {
  readonly pid: number;
  readonly jobIds: readonly string[];
}

/**
 * SIGKILLs a live dispatcher process only while it holds a running job, up to `most` times, a pause
 * of `pauseMs()` between kills, until `done()`. A random one is frozen (SIGSTOP) first, so it can
 * neither end nor start a job while the jobs table is read: when it holds a running job (its last
 * `started`/`took-over` entry is this process's) it is killed, its jobs in flight by construction;
 * otherwise it is let go (SIGCONT) and another is tried. A kill on a timer alone could land while
 * every dispatcher was still loading its bundle (a busy machine), and hit nothing.
 */
export async function killHolders(
  local: LocalStack,
  options: { readonly most: number; readonly pauseMs: () => number; readonly random: () => number; readonly done: () => Promise<boolean> },
  readRecords: () => Promise<ReadonlyArray<Record<string, unknown>>>,
): Promise<HeldAtKill[]> {
  const kills: HeldAtKill[] = [];
  while (kills.length < options.most && !(await options.done())) {
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs()));
    const alive = local.dispatchers.filter((c) => c.exitCode === null && c.signalCode === null && c.pid !== undefined);
    const victim = alive[Math.floor(options.random() * alive.length)];
    if (!victim?.pid || !victim.kill('SIGSTOP')) continue;
    const held = (await readRecords()).filter((r) => r.state === 'running' && lastStartBy(r) === victim.pid);
    if (held.length > 0 && victim.kill('SIGKILL')) kills.push({ pid: victim.pid, jobIds: held.map((r) => String(r.jobId)) });
    else victim.kill('SIGCONT');
  }
  return kills;
}

/** The pid of the process that last started or took over a job record (workerId `<host>-<pid>`). */
function lastStartBy(record: Record<string, unknown>): number | undefined {
  const history = (record.history ?? []) as ReadonlyArray<{ readonly what: string; readonly worker?: string }>;
  const last = history.filter((h) => h.what === 'started' || h.what === 'took-over').at(-1);
  const pid = /-(\d+)$/.exec(last?.worker ?? '')?.[1];
  return pid === undefined ? undefined : Number(pid);
}
