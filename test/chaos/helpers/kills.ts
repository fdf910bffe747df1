import type { LocalStack } from '../../../lib/local/dev';

/**
 * SIGKILLs one of the stack's live dispatcher processes (chosen at random) every `everyMs`, at most
 * `most` times (`taskworker dev` starts each one's replacement); keeps when each process was killed,
 * so a run it never saw the end of can be ended at its kill.
 */
export function killDispatchers(local: LocalStack, everyMs: number, most: number) {
  const killedAt = new Map<number, number>();
  let kills = 0;
  const timer = setInterval(() => {
    if (kills >= most) return;
    const alive = local.dispatchers.filter((c) => c.exitCode === null && c.signalCode === null && c.pid !== undefined);
    const victim = alive[Math.floor(Math.random() * alive.length)];
    if (!victim?.pid) return;
    killedAt.set(victim.pid, Date.now());
    victim.kill('SIGKILL');
    kills += 1;
  }, everyMs);
  return { killedAt: killedAt as ReadonlyMap<number, number>, kills: () => kills, stop: () => clearInterval(timer) };
}

/** One run of a job, from its task's effects log: its start's own fields, and when it started and ended. */
export type LoggedRun<F> = F & { readonly job: string; readonly pid: number; readonly start: number; readonly end: number };

/**
 * Each run noted in an effects table (`<job>#run#<attempt>#<pid>#start` / `#end`, each value JSON
 * with `at`; a start's also its `pid` and the task's own fields); a run without its end ended when
 * its process was killed (`killedAt`), and one whose process was not killed is an error.
 */
export function runsOf<F>(effects: ReadonlyArray<Record<string, unknown>>, killedAt: ReadonlyMap<number, number>): Array<LoggedRun<F>> {
  const byPk = new Map(effects.map((e) => [String(e.pk), e]));
  const runs: Array<LoggedRun<F>> = [];
  for (const [pk, e] of byPk) {
    const m = /^(.+)#run#(\d+)#(\d+)#start$/.exec(pk);
    if (!m) continue;
    const { at, pid, ...fields } = JSON.parse(String(e.value)) as F & { at: number; pid: number };
    const end = byPk.get(pk.replace(/#start$/, '#end'));
    const endAt = end ? (JSON.parse(String(end.value)) as { at: number }).at : killedAt.get(pid);
    if (endAt === undefined) throw new Error(`run ${pk} has no end and its process ${pid} was not killed`);
    runs.push({ ...(fields as F), job: m[1] as string, pid, start: at, end: endAt });
  }
  return runs;
}
