/**
 * What each task has taken to run in this container, so the loop can tell when a running task will
 * likely end: messages received now may wait that long for its slot. Pure: fed by the dispatcher,
 * no clock of its own.
 */

/** Weight of the newest run in the running mean: the last few dozen runs count. */
const SMOOTHING = 0.2;

export class RunTimes {
  private readonly means = new Map<string, number>();

  /** Notes a run of `task` that took `ms`. */
  observe(task: string, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const mean = this.means.get(task);
    this.means.set(task, mean === undefined ? ms : mean + SMOOTHING * (ms - mean));
  }

  /** The run time to expect of `task`, ms; undefined before its first run here. */
  expected(task: string): number | undefined {
    return this.means.get(task);
  }
}
