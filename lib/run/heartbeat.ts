import type { Clock } from '../clock';
import { HEARTBEAT_LEAD_MS, visibilityReserveMs } from '../deadlines';

export interface AutoHeartbeat {
  /** Stops beating (the task ended). */
  stop(): void;
}

/**
 * Beats for a task that may outlive its message's visibility (one started late in its batch):
 * just before the visibility would lapse, until the task's hard end. A beat that fails (the lease
 * is lost, or SQS refuses) is not repeated: the outcome decides then. `visibleUntil` reads where
 * the visibility stands now, since the task's own `ctx.heartbeat()` moves it too.
 */
export function autoHeartbeat(options: {
  readonly clock: Clock;
  readonly visibilityTimeoutSeconds: number;
  /** When the task's thread is killed at the latest. */
  readonly hardEnd: number;
  readonly visibleUntil: () => number;
  /** Extends the visibility (and lease); false when it could not. */
  readonly beat: () => Promise<boolean>;
}): AutoHeartbeat {
  const { clock } = options;
  const lead = visibilityReserveMs(options.visibilityTimeoutSeconds, HEARTBEAT_LEAD_MS);
  let running = true;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (!running || options.hardEnd <= options.visibleUntil() - lead) return;
    timer = setTimeout(
      () => {
        if (clock.now() < options.visibleUntil() - lead) return arm();
        void options.beat().then(
          (kept) => kept && arm(),
          () => undefined,
        );
      },
      Math.max(0, options.visibleUntil() - lead - clock.now()),
    );
  };
  arm();
  return {
    stop() {
      running = false;
      clearTimeout(timer);
    },
  };
}
