/** What the dashboard's server is started with (`taskworker ui`, `taskworker dev --ui`, the demo, the tests). */
import type { OperatorContext } from '../../lib/operate/operator-context';
import type { TaskDefinition } from '../../lib/tasks/task';
import type { LocalDispatchers, RecentInvocationCounts } from '../api-types';

export interface UiOptions {
  readonly app: string;
  /** The version shown first: the running dev's, or `--version`. */
  readonly defaultVersion: string;
  /** Versions offered by the picker (deployed in the account and region, or the local one). */
  readonly versions: () => Promise<readonly string[]>;
  readonly contextFor: (version: string) => Promise<OperatorContext>;
  /** Task definitions (for the publish form's queues and `validate`, and the events page's subscribers). */
  readonly tasks: () => Promise<readonly TaskDefinition[]>;
  readonly readOnly: boolean;
  /** Required on every state-changing request; and on every request when `tokenForReads`. */
  readonly token: string;
  /** Bound beyond loopback: reads need the token too (cookie, set by opening `/?token=…`). */
  readonly tokenForReads: boolean;
  /** When set, the Host header must pass it (loopback binds: stops DNS rebinding). */
  readonly acceptsHost?: (host: string) => boolean;
  readonly dispatchers?: () => LocalDispatchers | undefined;
  /** On AWS: the dispatcher function's recent invocations (CloudWatch), by version. */
  readonly invocations?: (version: string) => Promise<RecentInvocationCounts>;
  /** Directory of the prebuilt page (app.js, app.css); `/assets/*` is 404 without it. */
  readonly assetsDir?: string;
  /** Where each action is logged (one line). */
  readonly log: (line: string) => void;
}
