import type { SelectorName } from '../config/app-config';
import { lottery, reducedLottery, roundRobin, strictPriority } from './lotteries';
import type { QueueSelector, SelectorEnv } from './selector-types';
import { slaAware } from './sla-aware';

/** Builds a selector by its config name (lib/config/app-config.ts: `dispatcher.selector`). */
export function createSelector<M>(name: SelectorName, env: SelectorEnv<M>): QueueSelector<M> {
  switch (name) {
    case 'sla-aware':
      return slaAware(env);
    case 'reduced-lottery':
      return reducedLottery(env, 'receive');
    case 'reduced-lottery-gqa':
      return reducedLottery(env, 'attributes');
    case 'lottery':
      return lottery(env);
    case 'strict':
      return strictPriority(env);
    case 'round-robin':
      return roundRobin(env);
  }
}
