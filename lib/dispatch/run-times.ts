/**
 * What each task, and each queue's tasks together, have taken to hold a slot in this container, so
 * the loop can tell when a running task will likely end (messages received now may wait that long
 * for its slot) and how many of a queue's messages one slot gets through in a moment. Pure: fed by
 * the dispatcher, no clock of its own.
 */

/** Weight of the newest run in the running mean: the last few dozen runs count. */
const SMOOTHING = 0.2;

export class RunTimes {
  private readonly byTask = new Map<string, number>();
  private readonly byQueue = new Map<string, number>();

  /** Notes a run of `task`, a task of `queue`, that held its slot `ms`. */
  observe(task: string, queue: string, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    smooth(this.byTask, task, ms);
    smooth(this.byQueue, queue, ms);
  }

  /** The run time to expect of `task`, ms; undefined before its first run here. */
  expected(task: string): number | undefined {
    return this.byTask.get(task);
  }

  /** The run time to expect of the next message of `queue` (its tasks' runs together), ms; undefined before the first. */
  expectedOfQueue(queue: string): number | undefined {
    return this.byQueue.get(queue);
  }
}

function smooth(means: Map<string, number>, key: string, ms: number): void {
  const mean = means.get(key);
  means.set(key, mean === undefined ? ms : mean + SMOOTHING * (ms - mean));
}
