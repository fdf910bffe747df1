/**
 * What a local stack (lib/local/dev.ts) is given, and what it reports of its dispatcher processes:
 * the options of `startLocalStack`, and how a process that ended is described.
 */
import type { BatchReport, DispatcherSummary } from '../settle/report';

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export interface LocalStackOptions {
  readonly configFile: string;
  /** Overrides the config's tasksDir. */
  readonly tasksDir?: string;
  /** @defaultValue 'dev' */
  readonly version?: string;
  /** Dispatcher processes to start. @defaultValue 1 */
  readonly dispatchers?: number;
  readonly sqsPort?: number;
  readonly dynamodbPort?: number;
  /**
   * The emulators of another running stack (a second app beside the first, `taskworker dev
   * --join DIR`): none are started here, and stopping this stack leaves them running. Its queues,
   * tables, topic and subscriptions are created on them, so one app's events reach the other's
   * subscribers as on AWS.
   */
  readonly join?: { readonly sqsEndpoint: string; readonly dynamodbEndpoint: string };
  /**
   * Keep the emulators' state in this directory between runs (`taskworker dev` gives
   * `.taskworker/emulators`): DynamoDB keeps its tables there as it writes them, and a clean
   * `LocalStack.stop` writes the queues' messages and the buckets' objects there, put back at
   * the next start (lib/local/dev-state.ts says what a start does after a dev that was killed).
   * Ignored with `join`: the dev that owns the emulators keeps their state. @defaultValue in
   * memory, gone at the stop
   */
  readonly stateDir?: string;
  /** With `stateDir`: start empty, dropping what was kept there. @defaultValue false */
  readonly reset?: boolean;
  /** @defaultValue 'us-east-1' */
  readonly region?: string;
  /** Dispatcher log level. @defaultValue 'WARN' */
  readonly logLevel?: LogLevel;
  /** Invocation length of local dispatchers, seconds. @defaultValue the config's dispatcher.timeoutSeconds */
  readonly invocationSeconds?: number;
  /**
   * How the dispatchers are invoked. `back-to-back`: each process invokes the handler again as soon
   * as an invocation ends, so dispatchers always listen (harnesses, benchmarks). `on-demand`: as
   * in AWS — the schedule invokes the dispatcher function every minute, each doorbell queue's
   * trigger invokes its doorbell function when a message arrives (lib/local/wake.ts), and an idle
   * version has nothing running; `dispatchers` is then the dispatcher function's containers started
   * up front, and each doorbell queue has one more. As in Lambda, an invocation that finds every
   * container of its function busy starts a new one (lib/local/containers.ts): up to
   * `dispatcher.maxConcurrency` (the reserved concurrency) for the dispatcher and the trigger's
   * `MaximumConcurrency` for a doorbell; one that idled {@link LocalStackOptions.idleContainerMs}
   * is stopped again. @defaultValue 'back-to-back'
   */
  readonly invocations?: 'back-to-back' | 'on-demand';
  /** The schedule's period when `on-demand`, ms. @defaultValue one minute */
  readonly schedulePeriodMs?: number;
  /**
   * When `on-demand`, a container started because the others were busy is stopped after idling
   * this long, ms (Lambda keeps one for minutes; dev gives the memory back sooner).
   * @defaultValue 60 s
   */
  readonly idleContainerMs?: number;
  /**
   * Start a new dispatcher process when one exits while the stack runs (a task killed its process,
   * the OOM killer, a native crash, a stop past `rssLimitMb`), as Lambda starts a new container.
   * Quick deaths in a row back off, from 0.5 s doubling to 30 s. Off for harnesses that manage
   * their processes themselves. @defaultValue true
   */
  readonly replaceDeadDispatchers?: boolean;
  /**
   * Each line a dispatcher process writes (its JSON log lines, a task's console output). Without
   * it the processes write to this process's stdout and stderr directly.
   */
  readonly onOutput?: (line: string, dispatcher: number) => void;
  readonly onBatch?: (report: BatchReport, dispatcher: number) => void;
  readonly onInvocation?: (summary: DispatcherSummary, dispatcher: number) => void;
  readonly onDispatcherError?: (message: string, dispatcher: number) => void;
  /** A dispatcher process ended while the stack ran: how, what it held, and its replacement if any. */
  readonly onDispatcherExit?: (exit: DispatcherExit) => void;
  /** A dispatcher process was started (at the start, as a replacement, after a reload, or for an invocation that found the others busy). */
  readonly onDispatcherStart?: (dispatcher: number) => void;
  /** `on-demand`: a container started for an invocation that found the others busy was stopped after it idled (no death). */
  readonly onDispatcherRetired?: (dispatcher: number) => void;
  /** Fire the config's `schedules` (as EventBridge Scheduler does in AWS). @defaultValue true */
  readonly schedules?: boolean;
  /** A schedule sent a tick. */
  readonly onScheduleTick?: (tick: { readonly schedule: string; readonly scheduledTime: string; readonly jobId: string }) => void;
}

/** A job a dispatcher had received and not yet settled. */
export interface HeldJob {
  readonly queue: string;
  readonly messageId: string;
  readonly jobId?: string;
  readonly task?: string;
}

export interface DispatcherExit {
  readonly dispatcher: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Jobs it held: their messages come back once their visibility lapses. */
  readonly held: readonly HeldJob[];
  /** The dispatcher started in its place, and after how long. */
  readonly replacement?: { readonly dispatcher: number; readonly afterMs: number };
}

/** One more dispatcher process (`LocalStack.startDispatcher`): environment it adds, and the function it is a container of. */
export interface DispatcherProcessOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly fn?: string;
}
