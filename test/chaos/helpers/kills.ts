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
